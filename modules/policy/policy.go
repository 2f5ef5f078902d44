package policy

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Defaults applied to the zero fields of a [Policy].
const (
	DefaultMaxAttempts = 10
	DefaultBaseDelay   = time.Second
	DefaultMaxDelay    = 10 * time.Minute
	DefaultMaxSnoozes  = 100
)

// Reasons reported in [Decision.Reason].
const (
	ReasonRetry       = "retry"        // the item goes back to the queue at Decision.At
	ReasonMaxAttempts = "max_attempts" // the attempt budget is spent
	ReasonPermanent   = "permanent"    // the cause was marked with Permanent
	ReasonSnooze      = "snooze"       // a snoozed item goes back to the queue at Decision.At
	ReasonMaxSnoozes  = "max_snoozes"  // the snooze budget is spent
)

// Source yields numbers in [0, 1). *math/rand/v2.Rand satisfies it; so does
// [Fixed], which tests use to pin the jitter.
type Source interface {
	Float64() float64
}

// Fixed is a Source that always returns the same fraction, clamped to [0, 1].
// Fixed(1) disables jitter: every delay is the full backoff.
type Fixed float64

// Float64 returns f clamped to [0, 1].
func (f Fixed) Float64() float64 { return min(max(float64(f), 0), 1) }

// Policy says how often and how late a failed item is retried. The zero
// value is usable: zero fields take the Default* constants.
type Policy struct {
	// MaxAttempts is the number of attempts an item gets in all; the
	// failure of attempt MaxAttempts dead-letters it. Zero means
	// DefaultMaxAttempts; one means "never retry".
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt; each further
	// attempt doubles it. Zero means DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps the backoff. Zero means DefaultMaxDelay.
	MaxDelay time.Duration
	// Jitter draws the fraction of the backoff actually waited. Nil means
	// the process-wide generator of math/rand/v2, safe for concurrent use.
	Jitter Source
	// MaxSnoozes caps how often one item may be snoozed (a handler's "run
	// me again later", which charges no attempt): the snooze after the
	// MaxSnoozes-th dead-letters the item instead. Zero means
	// DefaultMaxSnoozes.
	MaxSnoozes int
}

// Default returns the policy with every field at its default.
func Default() Policy {
	return Policy{MaxAttempts: DefaultMaxAttempts, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, MaxSnoozes: DefaultMaxSnoozes}
}

// normalized returns p with its zero or negative fields replaced by defaults.
func (p Policy) normalized() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxSnoozes <= 0 {
		p.MaxSnoozes = DefaultMaxSnoozes
	}
	if p.BaseDelay > p.MaxDelay {
		p.BaseDelay = p.MaxDelay
	}
	return p
}

// Attempts returns the effective MaxAttempts (the default when unset).
func (p Policy) Attempts() int { return p.normalized().MaxAttempts }

// Snoozes returns the effective MaxSnoozes (the default when unset).
func (p Policy) Snoozes() int { return p.normalized().MaxSnoozes }

// DecideSnooze says what to do with an item snoozed for d at now that has
// been snoozed snoozes times before: back to the queue at now+d (no
// jitter: the handler asked for that moment), or, once the snoozes
// reach MaxSnoozes, to the dead letter with ReasonMaxSnoozes.
func (p Policy) DecideSnooze(snoozes int, d time.Duration, now time.Time) Decision {
	if snoozes >= p.Snoozes() {
		return Decision{Reason: ReasonMaxSnoozes}
	}
	return Decision{Retry: true, At: now.Add(d), Reason: ReasonSnooze}
}

// Decision is what [Policy.Decide] concluded about a failed attempt.
type Decision struct {
	// Retry is true when the item goes back to the queue; false means the
	// item is dead-lettered.
	Retry bool
	// At is when the item becomes due again; zero when Retry is false.
	At time.Time
	// Reason is one of ReasonRetry, ReasonMaxAttempts, ReasonPermanent
	// (Decide), ReasonSnooze, ReasonMaxSnoozes (DecideSnooze).
	Reason string
}

// Backoff returns the delay before the attempt that follows failed attempt
// number attempts (counted from 1), before jitter: BaseDelay doubled
// attempts-1 times, capped at MaxDelay. It is never negative and never
// decreases as attempts grow.
func (p Policy) Backoff(attempts int) time.Duration {
	p = p.normalized()
	if attempts < 1 {
		attempts = 1
	}
	d := p.BaseDelay
	for i := 1; i < attempts; i++ {
		if d >= p.MaxDelay/2 {
			return p.MaxDelay
		}
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// Decide says what to do after attempt number attempts (counted from 1, so
// the first failure is attempts == 1) failed with cause at time now.
func (p Policy) Decide(attempts int, cause error, now time.Time) Decision {
	p = p.normalized()
	if IsPermanent(cause) {
		return Decision{Reason: ReasonPermanent}
	}
	if attempts >= p.MaxAttempts {
		return Decision{Reason: ReasonMaxAttempts}
	}
	return Decision{Retry: true, At: now.Add(p.jitter(p.Backoff(attempts))), Reason: ReasonRetry}
}

// jitter scales d by a fraction drawn from the policy's source ("full jitter").
func (p Policy) jitter(d time.Duration) time.Duration {
	f := 0.0
	if p.Jitter != nil {
		f = p.Jitter.Float64()
	} else {
		f = rand.Float64()
	}
	f = min(max(f, 0), 1)
	return time.Duration(float64(d) * f)
}

// permanentError marks its cause as not worth retrying.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: an item failing with it goes to the dead
// letter at once. Permanent(nil) returns nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked with
// [Permanent].
func IsPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}
