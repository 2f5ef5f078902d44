package contract_test

import (
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

func TestRateBucket(t *testing.T) {
	l := contract.Limits{Rate: 4, Burst: 2} // a token every 250 ms, two at most
	now := float64(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	var b contract.RateBucket
	if got := b.Tokens(l, now); got != 2 {
		t.Fatalf("a new bucket holds %v tokens, want 2 (full)", got)
	}
	for i := range 2 {
		if !b.Allows(l, now) {
			t.Fatalf("take %d of a full bucket of 2 refused", i+1)
		}
		b = b.Take(l, now)
	}
	if b.Allows(l, now) {
		t.Fatal("a third take at the same instant allowed: the burst is 2")
	}
	if next := b.Next(l); next != now+250_000 {
		t.Fatalf("Next = %v µs after, want 250000", next-now)
	}
	if b.Allows(l, now+249_999) || !b.Allows(l, now+250_000) {
		t.Fatal("the next token must accrue at exactly 250 ms")
	}
	if got := b.Tokens(l, now+10e6); got != 2 {
		t.Fatalf("after 10 s the bucket holds %v, want 2: it never overfills", got)
	}
	if !(contract.RateBucket{TAT: now + 1e9}).Allows(contract.Limits{}, now) {
		t.Fatal("without a Rate the bucket always allows")
	}
	if got := (contract.Limits{Rate: 0.5}).EffectiveBurst(); got != 1 {
		t.Fatalf("burst of rate 0.5 = %d, want 1", got)
	}
	if got := (contract.Limits{Rate: 2.5}).EffectiveBurst(); got != 3 {
		t.Fatalf("burst of rate 2.5 = %d, want 3", got)
	}
}

func TestBudgetSlot(t *testing.T) {
	b := contract.Budget{CostMicros: 1, Window: 10 * time.Second} // 1 s slots
	if got := contract.BudgetSlot(b, time.UnixMilli(12_345)); got != 12 {
		t.Fatalf("slot of 12.345 s = %d, want 12", got)
	}
	if got := contract.BudgetSlot(b, time.UnixMilli(-1)); got != -1 {
		t.Fatalf("slot of -1 ms = %d, want -1 (floor, not truncation)", got)
	}
	if !contract.OverBudget(b, contract.Usage{CostMicros: 1}) || contract.OverBudget(b, contract.Usage{Tokens: 1 << 40}) {
		t.Fatal("OverBudget must compare only the ceilings set")
	}
}

func TestValidLimitsAccepted(t *testing.T) {
	for _, l := range []contract.Limits{
		{},
		{MaxLeased: contract.MaxLimitLeased, Rate: contract.MaxRate, Burst: contract.MaxLimitLeased, Weight: contract.MaxWeight},
		{Rate: 0.001},
		{Budget: contract.Budget{Tokens: 1, Window: contract.MinBudgetWindow}},
		{Budget: contract.Budget{CostMicros: 1, Window: contract.MaxBudgetWindow}},
	} {
		if err := contract.ValidateLimits(l); err != nil {
			t.Errorf("ValidateLimits(%+v) = %v, want nil", l, err)
		}
	}
	if err := contract.ValidateLimits(contract.Limits{Budget: contract.Budget{CostMicros: 1, Window: time.Second + time.Microsecond}}); err == nil {
		t.Error("a window that is not whole milliseconds was accepted")
	}
}

func TestClaimReportNote(t *testing.T) {
	var nilReport *contract.ClaimReport
	nilReport.Note(contract.HeldCap, time.Time{}) // no report asked for: a no-op
	r := &contract.ClaimReport{}
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r.Note(contract.HeldRate, t0.Add(time.Second))
	r.Note(contract.HeldCap, time.Time{})
	r.Note(contract.HeldBudget, t0.Add(time.Millisecond))
	r.Note(contract.HeldNone, t0)
	if r.PassedOver != 3 || r.Held[contract.HeldRate] != 1 || r.Held[contract.HeldCap] != 1 || r.Held[contract.HeldBudget] != 1 {
		t.Fatalf("report = %+v, want one of each reason", r)
	}
	if !r.RetryAt.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("RetryAt = %v, want the earliest end", r.RetryAt)
	}
}
