package contracttest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The suites start goroutines (concurrent patches, claimers, producers);
// every one must have ended when they return.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
