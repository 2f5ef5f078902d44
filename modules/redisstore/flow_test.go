package redisstore

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

func TestLimitsEncodingRoundTrips(t *testing.T) {
	for _, l := range []contract.Limits{
		{},
		{MaxLeased: 2},
		{Rate: 0.1, Burst: 7},
		{Rate: 1.0 / 3},
		{Rate: contract.MaxRate, Burst: contract.MaxLimitLeased, Weight: contract.MaxWeight, MaxLeased: contract.MaxLimitLeased},
		{Budget: contract.Budget{CostMicros: 1 << 52, Tokens: 3, Window: contract.MaxBudgetWindow}},
		{Weight: 3, Budget: contract.Budget{Tokens: 1, Window: 1500 * time.Millisecond}},
	} {
		got, ok := decodeLimits(encodeLimits(l))
		if !ok || got != l {
			t.Errorf("%+v came back as %+v (%v) from %q", l, got, ok, encodeLimits(l))
		}
	}
	for _, bad := range []string{"", "1|2|3", "a|1|0|0|0|0|0", "1|x|0|0|0|0|0"} {
		if _, ok := decodeLimits(bad); ok {
			t.Errorf("decodeLimits(%q) accepted it", bad)
		}
	}
}

func TestQueueLimitsSkipsThePlaceholder(t *testing.T) {
	own := contract.Limits{MaxLeased: 1}
	def := contract.Limits{Weight: 2}
	ql := queueLimits("jobs", map[string]string{"": "", "0:": encodeLimits(def), lp("a:b"): encodeLimits(own)})
	if ql.Queue != "jobs" || ql.Default != def || len(ql.Tenants) != 1 || ql.Tenants["a:b"] != own {
		t.Fatalf("%+v", ql)
	}
	if ql := queueLimits("q", nil); ql.Tenants == nil {
		t.Fatal("Tenants is nil; want an empty map")
	}
}

// The budget arithmetic of FlowStatus mirrors flow_lib.lua: 11 slots
// counted, charges kept in another width not counted, and the release at
// the first slot whose window is under the ceilings.
func TestBudgetSlots(t *testing.T) {
	b := contract.Budget{CostMicros: 100, Window: 10 * time.Second} // slots of 1 s
	slots := budgetSlots("1000|5:60:0|9:50:1|15:1:0", b.SlotMillis())
	if u := budgetUsed(slots, 15); u.CostMicros != 111 || u.Tokens != 1 {
		t.Fatalf("used at 15: %+v", u)
	}
	if u := budgetUsed(slots, 16); u.CostMicros != 51 {
		t.Fatalf("used at 16 (slot 5 left): %+v", u)
	}
	// Over at 15 (111); at 16: 51, under. Released at the start of slot 16.
	if ms := budgetRelease(b, slots, 15); ms != 16000 {
		t.Fatalf("release %d ms; want 16000", ms)
	}
	// Kept in 2 s slots, read in 1 s slots: a new window starts afresh.
	if other := budgetSlots("2000|3:7:0", 1000); len(other) != 0 {
		t.Fatalf("slots of another width counted: %+v", other)
	}
}

func TestNoteHeld(t *testing.T) {
	var r contract.ClaimReport
	rows := []any{int64(7), "rec", []any{"cap", "0", "rate", "1893456000500000", "budget", "1893456010000000"}}
	rest := noteHeld(rows, &r)
	if len(rest) != 2 {
		t.Fatalf("rest %v", rest)
	}
	want := time.Date(2030, 1, 1, 0, 0, 0, 500_000_000, time.UTC)
	if r.PassedOver != 3 || r.Held[contract.HeldCap] != 1 || !r.RetryAt.Equal(want) {
		t.Fatalf("report %+v; want RetryAt %v", r, want)
	}
	if rest := noteHeld([]any{int64(1), "rec"}, nil); len(rest) != 2 {
		t.Fatalf("a reply without a report lost rows: %v", rest)
	}
	if got := microsTime("2.5"); got.UnixNano() != 3000 {
		t.Fatalf("microsTime(2.5) = %d ns; want it rounded up to 3 us", got.UnixNano())
	}
	if got := microsTime("7"); got.UnixNano() != 7000 {
		t.Fatalf("microsTime(7) = %d ns", got.UnixNano())
	}
	if !microsTime("0").IsZero() || !microsTime("NaN").IsZero() || !microsTime("+Inf").IsZero() {
		t.Fatal("a zero until is not the zero time")
	}
}

// Bad limits and charges are refused by the front door before anything
// is sent.
func TestFlowRefusedBeforeSending(t *testing.T) {
	ctx := context.Background()
	q, err := NewQueue(offlineClient(t), nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var ve *contract.ValidationError
	for _, l := range []contract.Limits{{MaxLeased: -1}, {Rate: math.Inf(1)}, {Burst: 2}, {Weight: contract.MaxWeight + 1},
		{Budget: contract.Budget{CostMicros: 1}}, {Budget: contract.Budget{Window: time.Second}}} {
		if err := q.SetLimits(ctx, "", "acme", l); !errors.As(err, &ve) {
			t.Errorf("SetLimits(%+v): %v; want a *contract.ValidationError", l, err)
		}
	}
	if err := q.Charge(ctx, "", "acme", contract.Usage{Tokens: -1}); !errors.As(err, &ve) {
		t.Errorf("Charge of negative tokens: %v", err)
	}
	if err := q.Charge(ctx, "", "", contract.Usage{Tokens: 1}); !errors.As(err, &ve) {
		t.Errorf("Charge without a tenant: %v", err)
	}
}
