// Package backoff is the one schedule of waits between retries that the
// kit's retry loops share: the runner's claim and complete retries,
// pgstore's listener reconnects and redisstore's retry budget. A wait
// starts at a base, doubles with each failure in a row up to a cap, and
// is drawn at random below that (jitter), so that clients cut off
// together do not come back in step.
//
// [Backoff] is the schedule; [Budget] bounds a loop by tries and by time
// measured on an injected [contract.Clock], and [Budget.Start] gives one
// loop's [Schedule]; [Sleep] waits unless the context ends first. The
// random source is injectable ([Backoff.Rand]) so tests pin the jitter.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Jitter says how much of a wait is drawn at random.
type Jitter int

const (
	// NoJitter waits the whole step.
	NoJitter Jitter = iota
	// FullJitter draws the wait uniformly from (0, step]: the widest
	// spread, for many clients retrying one server.
	FullJitter
	// EqualJitter draws the wait from [step/2, step]: spread, yet never
	// much shorter than the step.
	EqualJitter
)

// Backoff is a capped exponential schedule with jitter.
type Backoff struct {
	// Base is the step after the first failure; it doubles with each
	// further failure in a row. At least a nanosecond is used.
	Base time.Duration
	// Max caps the step; below Base, Base is the cap.
	Max time.Duration
	// Jitter says how the wait is drawn from the step.
	Jitter Jitter
	// Rand draws a fraction in [0, 1); nil means math/rand/v2's Float64.
	Rand func() float64
}

// Step returns the step after failures earlier failures in a row (0 for
// the first retry), before jitter: Base doubled that many times, capped
// at Max. It never decreases as failures grow.
func (b Backoff) Step(failures int) time.Duration {
	base := max(b.Base, 1)
	limit := max(b.Max, base)
	if failures <= 0 {
		return base
	}
	if failures >= 62 || base > limit>>failures {
		return limit
	}
	return min(base<<failures, limit)
}

// Delay returns the wait before the next try after failures earlier
// failures in a row: Step(failures) with the jitter applied.
func (b Backoff) Delay(failures int) time.Duration {
	step := b.Step(failures)
	switch b.Jitter {
	case FullJitter:
		return step - time.Duration(b.fraction()*float64(step))
	case EqualJitter:
		half := step - step/2
		return step/2 + half - time.Duration(b.fraction()*float64(half))
	default:
		return step
	}
}

func (b Backoff) fraction() float64 {
	f := 0.0
	if b.Rand != nil {
		f = b.Rand()
	} else {
		f = rand.Float64()
	}
	return min(max(f, 0), 1)
}

// Budget bounds a retry loop: waits from Backoff, at most Attempts tries
// (the first included; 0 means no limit), and no wait that would end more
// than MaxElapsed after the first try (0 means no limit), measured on
// Clock (nil means the wall clock).
type Budget struct {
	Backoff
	Attempts   int
	MaxElapsed time.Duration
	Clock      contract.Clock
}

// Start begins one loop under the budget, its first try now.
func (b Budget) Start() *Schedule {
	if b.Clock == nil {
		b.Clock = contract.SystemClock{}
	}
	return &Schedule{budget: b, start: b.Clock.Now()}
}

// Schedule is one retry loop's progress under a [Budget]. It is not safe
// for concurrent use.
type Schedule struct {
	budget   Budget
	start    time.Time
	failures int
}

// Next records a failed try and returns the wait before the next one, or
// false when the budget allows no further try.
func (s *Schedule) Next() (time.Duration, bool) {
	s.failures++
	b := s.budget
	if b.Attempts > 0 && s.failures >= b.Attempts {
		return 0, false
	}
	wait := b.Delay(s.failures - 1)
	if b.MaxElapsed > 0 && b.Clock.Now().Sub(s.start)+wait > b.MaxElapsed {
		return 0, false
	}
	return wait, true
}

// Failures is how many tries have failed so far.
func (s *Schedule) Failures() int { return s.failures }

// Sleep waits d, or less when ctx ends first; it reports whether the
// whole wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
