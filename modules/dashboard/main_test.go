package dashboard

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The sampler goroutine must be gone once Close returns; the OTel
	// SDK's and net/http's idle helpers are not ours to stop.
	goleak.VerifyTestMain(m)
}
