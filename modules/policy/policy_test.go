package policy

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestNormalizedDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Policy
		want Policy
	}{
		{"zero", Policy{}, Policy{MaxAttempts: 10, BaseDelay: time.Second, MaxDelay: 10 * time.Minute, MaxSnoozes: 100}},
		{"negative", Policy{MaxAttempts: -1, BaseDelay: -time.Second, MaxDelay: -1}, Default()},
		{"base above max", Policy{MaxAttempts: 3, BaseDelay: time.Hour, MaxDelay: time.Minute}, Policy{MaxAttempts: 3, BaseDelay: time.Minute, MaxDelay: time.Minute, MaxSnoozes: 100}},
		{"kept", Policy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Second, MaxSnoozes: 3}, Policy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Second, MaxSnoozes: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.normalized(); got != tt.want {
				t.Fatalf("normalized() = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := (Policy{}).Attempts(); got != DefaultMaxAttempts {
		t.Fatalf("Attempts() = %d, want %d", got, DefaultMaxAttempts)
	}
}

func TestBackoff(t *testing.T) {
	p := Policy{BaseDelay: time.Second, MaxDelay: 10 * time.Second}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		attempts := i // 0 is treated as 1
		if got := p.Backoff(attempts); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", attempts, got, w)
		}
	}
	if got := p.Backoff(1 << 30); got != 10*time.Second {
		t.Errorf("Backoff(huge) = %v, want cap", got)
	}
}

func TestDecide(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		p        Policy
		attempts int
		cause    error
		want     Decision
	}{
		{"first failure, no jitter", Policy{Jitter: Fixed(1)}, 1, boom, Decision{Retry: true, At: t0.Add(time.Second), Reason: ReasonRetry}},
		{"third failure, half jitter", Policy{Jitter: Fixed(0.5)}, 3, boom, Decision{Retry: true, At: t0.Add(2 * time.Second), Reason: ReasonRetry}},
		{"zero jitter retries now", Policy{Jitter: Fixed(0)}, 4, boom, Decision{Retry: true, At: t0, Reason: ReasonRetry}},
		{"nil cause still retries", Policy{Jitter: Fixed(1)}, 1, nil, Decision{Retry: true, At: t0.Add(time.Second), Reason: ReasonRetry}},
		{"last attempt dies", Policy{MaxAttempts: 3}, 3, boom, Decision{Reason: ReasonMaxAttempts}},
		{"past the budget dies", Policy{MaxAttempts: 3}, 7, boom, Decision{Reason: ReasonMaxAttempts}},
		{"single attempt policy", Policy{MaxAttempts: 1}, 1, boom, Decision{Reason: ReasonMaxAttempts}},
		{"permanent dies at once", Policy{}, 1, Permanent(boom), Decision{Reason: ReasonPermanent}},
		{"wrapped permanent dies", Policy{}, 1, fmt.Errorf("ctx: %w", Permanent(boom)), Decision{Reason: ReasonPermanent}},
		{"capped delay", Policy{BaseDelay: time.Second, MaxDelay: 3 * time.Second, Jitter: Fixed(1)}, 5, boom, Decision{Retry: true, At: t0.Add(3 * time.Second), Reason: ReasonRetry}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.Decide(tt.attempts, tt.cause, t0)
			if got != tt.want {
				t.Fatalf("Decide(%d, %v) = %+v, want %+v", tt.attempts, tt.cause, got, tt.want)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) must be nil")
	}
	base := errors.New("bad input")
	err := Permanent(base)
	if !errors.Is(err, base) {
		t.Fatal("Permanent must wrap its cause")
	}
	if err.Error() != "bad input" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if IsPermanent(base) || IsPermanent(nil) {
		t.Fatal("plain errors are not permanent")
	}
}

func TestFixedClamps(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{-1, 0}, {0.25, 0.25}, {2, 1}} {
		if got := Fixed(tt.in).Float64(); got != tt.want {
			t.Errorf("Fixed(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDefaultJitterStaysInRange(t *testing.T) {
	p := Policy{BaseDelay: time.Second, MaxDelay: time.Minute}
	for i := 0; i < 1000; i++ {
		d := p.Decide(3, nil, t0)
		if delay := d.At.Sub(t0); delay < 0 || delay > 4*time.Second {
			t.Fatalf("delay %v outside [0, 4s]", delay)
		}
	}
}

func FuzzDecide(f *testing.F) {
	f.Add(1, int64(time.Second), int64(time.Minute), 10, 0.5, false)
	f.Add(100, int64(1), int64(1), 1, 0.99, true)
	f.Add(0, int64(-5), int64(0), -3, -1.0, false)
	f.Fuzz(func(t *testing.T, attempts int, base, maxDelay int64, maxAttempts int, frac float64, permanent bool) {
		p := Policy{MaxAttempts: maxAttempts, BaseDelay: time.Duration(base), MaxDelay: time.Duration(maxDelay), Jitter: Fixed(frac)}
		n := p.normalized()
		var cause error = errors.New("x")
		if permanent {
			cause = Permanent(cause)
		}
		d := p.Decide(attempts, cause, t0)
		switch {
		case permanent:
			if d.Retry || d.Reason != ReasonPermanent {
				t.Fatalf("permanent cause retried: %+v", d)
			}
		case attempts >= n.MaxAttempts:
			if d.Retry || d.Reason != ReasonMaxAttempts {
				t.Fatalf("attempts %d >= %d retried: %+v", attempts, n.MaxAttempts, d)
			}
		default:
			if !d.Retry || d.Reason != ReasonRetry {
				t.Fatalf("attempts %d < %d not retried: %+v", attempts, n.MaxAttempts, d)
			}
			delay := d.At.Sub(t0)
			if delay < 0 || delay > n.MaxDelay {
				t.Fatalf("delay %v outside [0, %v]", delay, n.MaxDelay)
			}
		}
		if b, next := p.Backoff(attempts), p.Backoff(attempts+1); b < 0 || b > n.MaxDelay || next < b {
			t.Fatalf("backoff not monotone/bounded: %v then %v (max %v)", b, next, n.MaxDelay)
		}
	})
}

func TestDecideSnooze(t *testing.T) {
	now := time.Unix(1_000, 0)
	p := Policy{MaxSnoozes: 2}
	for snoozes, want := range []Decision{
		{Retry: true, At: now.Add(time.Minute), Reason: ReasonSnooze},
		{Retry: true, At: now.Add(time.Minute), Reason: ReasonSnooze},
		{Reason: ReasonMaxSnoozes},
	} {
		if got := p.DecideSnooze(snoozes, time.Minute, now); got != want {
			t.Errorf("DecideSnooze(%d) = %+v, want %+v", snoozes, got, want)
		}
	}
	if got := (Policy{}).Snoozes(); got != DefaultMaxSnoozes {
		t.Errorf("zero policy Snoozes() = %d, want %d", got, DefaultMaxSnoozes)
	}
}
