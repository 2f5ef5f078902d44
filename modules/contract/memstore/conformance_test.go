package memstore_test

import (
	"os"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// mutationEnv names the deliberate faults the stores of this test binary
// carry. Only TestMutantsAreCaught sets it, in the subprocesses it starts.
const mutationEnv = "ADK_MEMSTORE_MUTATION"

// newStore returns a fresh store, with the faults of mutationEnv if set.
func newStore(t *testing.T, clock contract.Clock, opts ...memstore.Option) *memstore.Store {
	t.Helper()
	names := os.Getenv(mutationEnv)
	if names == "" {
		return memstore.New(clock, opts...)
	}
	s, err := memstore.NewMutant(clock, names, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStateStore(t *testing.T) {
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock) contract.StateStore {
		return newStore(t, clock)
	})
}

func TestWorkQueue(t *testing.T) {
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		return newStore(t, clock, memstore.WithPolicy(p))
	})
}
