package memstore_test

import (
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// newStore returns a fresh store.
func newStore(t *testing.T, clock contract.Clock, s memstore.Settings) *memstore.Store {
	t.Helper()
	return memstore.New(clock, s)
}

func TestStateStore(t *testing.T) {
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		return newStore(t, clock, memstore.Settings{Runs: p})
	})
}

func TestWorkQueue(t *testing.T) {
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		return newStore(t, clock, memstore.Settings{Policy: p})
	})
}
