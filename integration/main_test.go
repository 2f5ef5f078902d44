package integration

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/adkit/adk/integration/internal/oracle"
)

// TestMain doubles as the fault suite's worker: the oracle starts this
// binary again with oracle.EnvWorker set, and then it works the queue
// instead of running tests.
func TestMain(m *testing.M) {
	if oracle.IsWorker() {
		os.Exit(oracle.WorkerMain())
	}
	code := m.Run()
	stopShared()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
