package contracttest

import (
	"sync"
	"time"
)

// FakeClock is a contract.Clock that moves only when told to. It is safe
// for concurrent use. The zero value starts at FakeEpoch.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// FakeEpoch is where a zero FakeClock starts: a fixed instant, so failures
// reproduce.
var FakeEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// NewFakeClock returns a clock reading start (FakeEpoch when zero).
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the clock's current reading.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = FakeEpoch
	}
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative) and
// returns the new reading.
func (c *FakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		c.now = FakeEpoch
	}
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
