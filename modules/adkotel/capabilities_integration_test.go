//go:build integration

package adkotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace/noop"
)

// Each wrapper of the kit (adkotel's, claimcheck's, and the two stacked
// either way) forwards each optional capability of each backing: it
// reports the backing's capabilities, and every capability's methods reach
// the backing through it.
func TestWrappersForwardEveryCapability(t *testing.T) {
	// Providers of the test's own: the globals would keep the gauges of
	// these queues registered after their clients close.
	otel := []adkotel.Option{adkotel.WithTracerProvider(noop.NewTracerProvider()), adkotel.WithMeterProvider(metricnoop.NewMeterProvider())}
	wrappers := []struct {
		name string
		wrap func(contract.WorkQueue) contract.WorkQueue
	}{
		{"adkotel", func(q contract.WorkQueue) contract.WorkQueue { return adkotel.WrapQueue(q, otel...) }},
		{"claimcheck", func(q contract.WorkQueue) contract.WorkQueue { return claimcheck.Wrap(q, claimcheck.NewMemory(), 8) }},
		{"adkotel/claimcheck", func(q contract.WorkQueue) contract.WorkQueue {
			return adkotel.WrapQueue(claimcheck.Wrap(q, claimcheck.NewMemory(), 8), otel...)
		}},
		{"claimcheck/adkotel", func(q contract.WorkQueue) contract.WorkQueue {
			return claimcheck.Wrap(adkotel.WrapQueue(q, otel...), claimcheck.NewMemory(), 8)
		}},
	}
	for _, b := range e2eBackings() {
		t.Run(b.name, func(t *testing.T) {
			for _, wr := range wrappers {
				t.Run(wr.name, func(t *testing.T) {
					q := b.fresh(t, defaultPolicy)(t, noop.NewTracerProvider())
					checkForwarding(t, q, wr.wrap(q), b.system)
				})
			}
		})
	}
}

func checkForwarding(t *testing.T, q, w contract.WorkQueue, system string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := contract.CapabilitiesOf(q)
	// History comes to the backings one by one: it is checked below
	// where the backing has it, and the wrapper must report it exactly
	// when the backing does.
	every := contract.Capabilities{Inspector: true, Waker: true, Stats: true, CompleteAndClaim: true, Flow: true, Lifecycle: true, History: want.History, Backing: system}
	if want != every {
		t.Fatalf("the backing reports %+v; want every capability and Backing %q", want, system)
	}
	if got := contract.CapabilitiesOf(w); got != want {
		t.Fatalf("the wrapper reports %+v; want the backing's %+v", got, want)
	}
	ins, okI := contract.AsInspector(w)
	wk, okW := contract.AsWaker(w)
	st, okS := contract.AsStatsSource(w)
	cc, okC := contract.AsCompleteClaimer(w)
	fc, okF := contract.AsFlowController(w)
	lc, okL := contract.AsLifecycleController(w)
	if !okI || !okW || !okS || !okC || !okF || !okL {
		t.Fatalf("As*: inspector %v waker %v stats %v complete-claimer %v flow %v lifecycle %v; want all", okI, okW, okS, okC, okF, okL)
	}

	// FlowController: limits set through the wrapper are the backing's.
	if err := fc.SetLimits(ctx, "", "acme", contract.Limits{MaxLeased: 5}); err != nil {
		t.Fatalf("SetLimits through the wrapper: %v", err)
	}
	inner, _ := contract.AsFlowController(q)
	if ql, err := inner.Limits(ctx, ""); err != nil || ql.Tenants["acme"].MaxLeased != 5 {
		t.Errorf("the backing's limits after a SetLimits through the wrapper: %+v, %v", ql, err)
	}

	// Waker: an enqueue through the wrapper wakes a subscriber of it.
	wake, stop := wk.Subscribe("")
	defer stop()
	for _, id := range []string{"one", "two"} {
		if err := w.Enqueue(ctx, contract.Item{Tenant: "acme", ID: id, Payload: []byte("a payload past the threshold")}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-wake:
	case <-ctx.Done():
		t.Fatal("no wake through the wrapper after an enqueue")
	}

	// Inspector: the wrapper's answers are the backing's.
	if h, err := ins.Health(ctx); err != nil || h.Backing != system {
		t.Errorf("Health through the wrapper: Backing %q, %v; want %q", h.Backing, err, system)
	}
	tenants, err := ins.Tenants(ctx, "")
	if err != nil || len(tenants) != 1 || tenants[0].Tenant != "acme" || tenants[0].Ready != 2 {
		t.Errorf("Tenants through the wrapper: %+v, %v; want acme with 2 ready", tenants, err)
	}
	if _, err := ins.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "one"}); err != nil {
		t.Errorf("Item through the wrapper: %v", err)
	}

	// CompleteAndClaim: completes one and claims the other in one call.
	held, err := w.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil || len(held) != 1 {
		t.Fatalf("Claim: %d leases, %v", len(held), err)
	}
	next, err := cc.CompleteAndClaim(ctx, held, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil || len(next) != 1 || next[0].Item.ID == held[0].Item.ID {
		t.Fatalf("CompleteAndClaim through the wrapper: %d leases, %v; want the other item", len(next), err)
	}
	if string(next[0].Item.Payload) != "a payload past the threshold" {
		t.Errorf("claimed payload %q; want it as enqueued", next[0].Item.Payload)
	}
	if _, err := ins.Item(ctx, held[0].Key()); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("the completed item is still there (%v)", err)
	}

	// StatsSource: the wrapper reads the backing's counters, which the
	// calls above moved.
	before := st.Stats()
	innerStats, _ := contract.AsStatsSource(q)
	after := innerStats.Stats()
	if before == (contract.Stats{}) {
		t.Errorf("Stats through the wrapper are all zero")
	}
	if before.PoolAcquires > after.PoolAcquires || before.Wakes > after.Wakes {
		t.Errorf("Stats through the wrapper %+v run ahead of the backing's %+v", before, after)
	}
	// LifecycleController: a pause through the wrapper is the backing's.
	if err := lc.Pause(ctx, "", "globex"); err != nil {
		t.Fatalf("Pause through the wrapper: %v", err)
	}
	innerLC, _ := contract.AsLifecycleController(q)
	if ps, err := innerLC.Paused(ctx, ""); err != nil || !ps.TenantPaused("globex") {
		t.Errorf("the backing's pauses after a Pause through the wrapper: %+v, %v", ps, err)
	}

	// HistoryKeeper: a retention set through the wrapper is the
	// backing's, and the wrapper's reads and reports are the backing's.
	hk, okH := contract.AsHistoryKeeper(w)
	if okH != want.History {
		t.Fatalf("AsHistoryKeeper through the wrapper: %v; the backing keeps history: %v", okH, want.History)
	}
	if !want.History {
		t.Logf("the %s backing keeps no history yet: HistoryKeeper forwarding not exercised", system)
		return
	}
	r := contract.Retention{Age: time.Hour, Events: 10}
	if err := hk.SetRetention(ctx, "", r); err != nil {
		t.Fatalf("SetRetention through the wrapper: %v", err)
	}
	innerHK, _ := contract.AsHistoryKeeper(q)
	if got, err := innerHK.Retention(ctx, ""); err != nil || got != r {
		t.Errorf("the backing's retention after a SetRetention through the wrapper: %+v, %v", got, err)
	}
	res, err := hk.EnqueueReport(ctx, contract.Item{Tenant: "acme", ID: next[0].Item.ID, Payload: []byte("a payload past the threshold")},
		contract.Item{Tenant: "acme", ID: "three"})
	if err != nil || len(res) != 2 || !res[0].Duplicate || res[1].Duplicate {
		t.Fatalf("EnqueueReport through the wrapper: %+v, %v; want the leased item a duplicate, three new", res, err)
	}
	if found, err := hk.Find(ctx, "", "three"); err != nil || len(found) != 1 || found[0].Tenant != "acme" {
		t.Errorf("Find through the wrapper: %+v, %v", found, err)
	}
	if h, err := hk.History(ctx, contract.ItemKey{Tenant: "acme", ID: "three"}); err != nil || len(h.Events) != 1 || h.Events[0].Kind != contract.EventEnqueued {
		t.Errorf("History through the wrapper: %+v, %v; want its enqueued event", h, err)
	}
	if page, err := hk.QueueEvents(ctx, "", "", 10); err != nil || len(page.Events) == 0 {
		t.Errorf("QueueEvents through the wrapper: %+v, %v", page, err)
	}
	if _, err := hk.Finished(ctx, contract.FinishedQuery{Page: contract.PageRequest{Limit: 10}}); err != nil {
		t.Errorf("Finished through the wrapper: %v", err)
	}
	if _, err := hk.Prune(ctx, ""); err != nil {
		t.Errorf("Prune through the wrapper: %v", err)
	}
}
