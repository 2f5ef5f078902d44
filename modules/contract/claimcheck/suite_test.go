package claimcheck_test

import (
	"math"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// Below its threshold the wrapper is invisible: the wrapped queue passes
// the whole WorkQueue suite, Inspector and Waker groups included, which
// also proves that the optional interfaces are forwarded. (Above it the
// differences are the point: items carry the reference in their metadata,
// dead letters show it instead of the bytes, and payloads over the
// backing's cap are accepted.)
func TestWrapBelowThresholdPassesQueueSuite(t *testing.T) {
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		return claimcheck.Wrap(memstore.New(clock, memstore.Settings{Policy: p}), claimcheck.NewMemory(), math.MaxInt)
	})
}
