package contract

import "time"

// Clock tells the time. Lease arithmetic uses the injected clock, never the
// server's, so tests can move time (contracttest.FakeClock).
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
