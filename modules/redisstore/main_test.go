package redisstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a wake
// subscription not ended, a client not closed).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
