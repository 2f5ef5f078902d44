package backoff_test

import (
	"context"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract/backoff"
	"github.com/adkit/adk/modules/contract/contracttest"
)

func fixed(f float64) func() float64 { return func() float64 { return f } }

// The step doubles from Base with each failure in a row and stops at
// Max, however many failures there are (no overflow past 2^62).
func TestStepDoublesUpToTheCap(t *testing.T) {
	b := backoff.Backoff{Base: 10 * time.Millisecond, Max: time.Second}
	want := []time.Duration{10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i, w := range want {
		if got := b.Step(i); got != w*time.Millisecond {
			t.Errorf("Step(%d) = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	for _, failures := range []int{-1, 61, 62, 63, 64, 1 << 30} {
		got := b.Step(failures)
		if failures < 0 && got != b.Base || failures >= 0 && got != b.Max {
			t.Errorf("Step(%d) = %v", failures, got)
		}
	}
	// A cap below the base is the base; a zero base is a nanosecond.
	if got := (backoff.Backoff{Base: time.Second, Max: time.Millisecond}).Step(5); got != time.Second {
		t.Errorf("Max below Base: Step(5) = %v, want Base", got)
	}
	if got := (backoff.Backoff{}).Step(3); got != 1 {
		t.Errorf("zero Backoff: Step(3) = %v, want 1ns", got)
	}
}

// Each jitter keeps the wait within its range, at the ends the source
// can draw, and the default source stays in range too.
func TestDelayJitterRanges(t *testing.T) {
	step := 800 * time.Millisecond
	for _, c := range []struct {
		jitter   backoff.Jitter
		lo, hi   time.Duration
		at0, at1 time.Duration // the wait for a draw of 0 and of just below 1
	}{
		{backoff.NoJitter, step, step, step, step},
		{backoff.FullJitter, 1, step, step, 1},
		{backoff.EqualJitter, step / 2, step, step, step/2 + 1},
	} {
		b := backoff.Backoff{Base: step, Max: step, Jitter: c.jitter, Rand: fixed(0)}
		if got := b.Delay(0); got != c.at0 {
			t.Errorf("jitter %d, draw 0: %v, want %v", c.jitter, got, c.at0)
		}
		b.Rand = fixed(1 - 1e-12)
		if got := b.Delay(0); got != c.at1 {
			t.Errorf("jitter %d, draw ~1: %v, want %v", c.jitter, got, c.at1)
		}
		b.Rand = nil
		for range 200 {
			if got := b.Delay(0); got < c.lo || got > c.hi {
				t.Fatalf("jitter %d: %v outside [%v, %v]", c.jitter, got, c.lo, c.hi)
			}
		}
	}
}

// A budget of attempts allows that many tries in all, with the waits of
// the schedule between them.
func TestBudgetAttempts(t *testing.T) {
	s := backoff.Budget{Backoff: backoff.Backoff{Base: time.Millisecond, Max: 4 * time.Millisecond}, Attempts: 4}.Start()
	var waits []time.Duration
	for {
		w, ok := s.Next()
		if !ok {
			break
		}
		waits = append(waits, w)
	}
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}
	if len(waits) != len(want) || s.Failures() != 4 {
		t.Fatalf("waits %v after %d failures, want %v after 4", waits, s.Failures(), want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
}

// MaxElapsed is measured on the injected clock: a wait that would end
// past it is refused, one that ends on it is allowed.
func TestBudgetMaxElapsedOnTheClock(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	s := backoff.Budget{Backoff: backoff.Backoff{Base: time.Second, Max: time.Second}, MaxElapsed: 10 * time.Second, Clock: clock}.Start()
	for i := range 10 {
		w, ok := s.Next()
		if !ok || w != time.Second {
			t.Fatalf("try %d at %v: %v, %v; want another second", i+2, clock.Now().Sub(contracttest.FakeEpoch), w, ok)
		}
		clock.Advance(w)
	}
	if w, ok := s.Next(); ok {
		t.Fatalf("a wait of %v past MaxElapsed was allowed", w)
	}
	// Without limits a budget never runs out.
	s = backoff.Budget{Backoff: backoff.Backoff{Base: time.Hour}, Clock: clock}.Start()
	for range 1000 {
		clock.Advance(24 * time.Hour)
		if _, ok := s.Next(); !ok {
			t.Fatal("a budget without limits ran out")
		}
	}
}

// Sleep returns early, reporting it, when the context ends, and at once
// for a context already done.
func TestSleep(t *testing.T) {
	if !backoff.Sleep(context.Background(), time.Millisecond) {
		t.Fatal("a whole wait reported as cut short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{0, time.Hour} {
		if backoff.Sleep(ctx, d) {
			t.Fatalf("Sleep(%v) on an ended context reported the whole wait", d)
		}
	}
	ctx, cancel = context.WithCancel(context.Background())
	go cancel()
	if backoff.Sleep(ctx, time.Hour) {
		t.Fatal("Sleep outlived its context")
	}
}
