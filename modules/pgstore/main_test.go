package pgstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The listener, the poll-only waker and pgxpool start goroutines; every
// test must leave none behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
