package contracttest

import (
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// StateFactory returns a new, empty StateStore that reads time from clock,
// treats fences and versions as p says (the backing's Settings.Runs) and
// keeps the default size limit (contract.DefaultMaxValueBytes). It
// registers its own clean-up with t.Cleanup. Each call must return a store
// that shares nothing with stores from earlier calls (a fresh key
// namespace, schema or instance).
type StateFactory func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore

// QueueFactory returns a new, empty WorkQueue that reads time from clock,
// decides retries with p and keeps the default size limit. Like
// StateFactory, it cleans up after itself and shares nothing between calls.
type QueueFactory func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue
