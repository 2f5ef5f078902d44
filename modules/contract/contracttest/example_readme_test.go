package contracttest_test

import (
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// The README's snippet, as it stands there, compiled with the module so
// it cannot drift from the API: a backing's test running the queue suite
// (renamed, since suite_test.go has a TestWorkQueue of its own).
// A test function cannot run inside an example, so it is compiled only.
func Example_readme() {
	_ = readmeTestWorkQueue
}

func readmeTestWorkQueue(t *testing.T) {
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		return memstore.New(clock, memstore.Settings{Policy: p})
	})
}
