package contract

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("x"), false},
		{"unavailable state", &StatePersistenceError{Reason: ReasonUnavailable, Transient: true}, true},
		{"too large", TooLarge("run data", 10, 5), false},
		{"queue unavailable wrapped", fmt.Errorf("claim: %w", &QueueUnavailableError{Err: errors.New("dial")}), true},
		{"pool exhausted", &PoolExhaustedError{Backing: "redis"}, false},
		{"lease lost", &LeaseLostError{}, false},
		{"validation", &ValidationError{Field: "x", Problem: "y"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retryable(tt.err); got != tt.want {
				t.Fatalf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorsNameWhatAndFix(t *testing.T) {
	cause := errors.New("connection refused")
	tests := []struct {
		err  error
		want []string
	}{
		{&ValidationError{Field: "Item.Tenant", Problem: "is empty; give it a value"}, []string{"Item.Tenant", "give it a value"}},
		{&StateConflictError{Tenant: "acme", ID: "r1", Expected: 3, Actual: 5}, []string{`"acme"`, "expected 3", "stored 5"}},
		{TooLarge("item payload", 300000, 262144), []string{"300000", "262144", "too_large", "claim check"}},
		{TooLarge("run data", 300000, 262144), []string{"run data", "too_large"}},
		{&StatePersistenceError{Reason: ReasonUnavailable, Transient: true, Err: cause}, []string{"unavailable", "connection refused"}},
		{&QueueUnavailableError{Err: cause}, []string{"queue unavailable", "connection refused"}},
		{&QueueUnavailableError{}, []string{"unknown cause"}},
		{&PoolExhaustedError{Backing: "postgresql", Err: cause}, []string{"postgresql", "pool exhausted", "worker count"}},
		{&LeaseLostError{Items: []ItemKey{{"a", "q", "1"}, {"a", "q", "2"}}}, []string{"2 item(s)", `"a"/"q"/"1"`, `"2"`}},
		{&LeaseLostError{Items: make([]ItemKey, 8)}, []string{"8 item(s)", "and 3 more"}},
		{&SchemaError{Object: "adk_schema.version", Found: "1", Want: "2", Fix: "apply the migration"}, []string{"adk_schema.version", "is 1", "want 2", "apply the migration"}},
		{&PreflightError{Setting: "maxmemory-policy", Value: "allkeys-lru", Fix: "set noeviction"}, []string{"maxmemory-policy", "allkeys-lru", "set noeviction"}},
		{&CounterOverflowError{Tenant: "acme", ID: "r1", Counter: "Cursor", Stored: math.MaxInt64 - 1, Delta: 2},
			[]string{`"acme"/"r1"`, "Counters.Cursor", "9223372036854775806", "+2", "nothing written", "coarser units"}},
	}
	for _, tt := range tests {
		msg := tt.err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%T message %q lacks %q", tt.err, msg, w)
			}
		}
	}
}

func TestErrorMatching(t *testing.T) {
	cause := errors.New("dial")
	if !errors.Is(fmt.Errorf("x: %w", &ValidationError{}), ErrInvalid) {
		t.Error("ValidationError does not match ErrInvalid")
	}
	if !errors.Is(fmt.Errorf("x: %w", &CounterOverflowError{}), ErrInvalid) {
		t.Error("CounterOverflowError does not match ErrInvalid")
	}
	if errors.Is(errors.New("other"), ErrInvalid) {
		t.Error("a plain error matches ErrInvalid")
	}
	for _, err := range []error{
		&StatePersistenceError{Err: cause}, &QueueUnavailableError{Err: cause}, &PoolExhaustedError{Err: cause},
	} {
		if !errors.Is(err, cause) {
			t.Errorf("%T does not unwrap to its cause", err)
		}
	}
	if _, ok := errors.AsType[*StateConflictError](fmt.Errorf("put: %w", &StateConflictError{Expected: 1, Actual: 2})); !ok {
		t.Error("StateConflictError not found by errors.AsType")
	}
}

func TestCheckPatch(t *testing.T) {
	const max, min = math.MaxInt64, math.MinInt64
	tests := []struct {
		name    string
		c, d    Counters
		counter string // "" when the patch fits
	}{
		{"small", Counters{InputTokens: 5}, Counters{InputTokens: 7, Cursor: -3}, ""},
		{"up to the edge", Counters{InputTokens: max - 3}, Counters{InputTokens: 3}, ""},
		{"down to the edge", Counters{CostMicros: min + 3}, Counters{CostMicros: -3}, ""},
		{"one past the top", Counters{InputTokens: max - 3}, Counters{InputTokens: 4}, "InputTokens"},
		{"one past the bottom", Counters{CostMicros: min + 3}, Counters{CostMicros: -4}, "CostMicros"},
		{"opposite signs never overflow", Counters{Iterations: max}, Counters{Iterations: min}, ""},
		{"the last counter", Counters{Cursor: max}, Counters{InputTokens: 1, OutputTokens: 1, CostMicros: 1, Iterations: 1, Cursor: 1}, "Cursor"},
		{"the first of two is named", Counters{OutputTokens: max, Iterations: max}, Counters{OutputTokens: 1, Iterations: 1}, "OutputTokens"},
		{"largest deltas", Counters{}, Counters{InputTokens: max, OutputTokens: min}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPatch("acme", "r1", tt.c, tt.d)
			if tt.counter == "" {
				if err != nil {
					t.Fatalf("CheckPatch = %v, want nil", err)
				}
				return
			}
			e, ok := errors.AsType[*CounterOverflowError](err)
			if !ok || e.Counter != tt.counter || e.Tenant != "acme" || e.ID != "r1" {
				t.Fatalf("CheckPatch = %#v, want an overflow of %s", err, tt.counter)
			}
			i := slices.Index(counterNames[:], e.Counter)
			if e.Stored != tt.c.fields()[i] || e.Delta != tt.d.fields()[i] || CounterName(i) != e.Counter {
				t.Errorf("overflow reports stored %d, delta %d; want %d, %d", e.Stored, e.Delta, tt.c.fields()[i], tt.d.fields()[i])
			}
		})
	}
}
