package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run, in both lanes, when a test leaves a
// goroutine running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
