package dashboard

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The sampler goroutine must be gone once Close returns; the OTel
	// SDK's and net/http's idle helpers are not ours to stop, nor is the
	// redial go-redis schedules after a refused connection (the
	// unreachable-backing tests provoke one), which outlives Close by up
	// to a second.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
