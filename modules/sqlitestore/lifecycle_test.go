package sqlitestore_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// Every lifecycle state survives closing the file and opening it again:
// the pauses of a queue and of a tenant, a waiting item, a cancelled item,
// a lease a cancel marked and the order of prioritised items, and a
// signal sent after the reopen resumes the wait.
func TestLifecycleSurvivesReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "adk.db")
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	open := func() (*sqlitestore.SQLiteWorkQueue, func()) {
		db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := sqlitestore.OpenQueue(ctx, db, clock, sqlitestore.Settings{})
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		return q, func() { db.Close() }
	}
	key := func(tenant, id string) contract.ItemKey {
		return contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id}
	}
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 2}

	q, closeFile := open()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must(q.Enqueue(ctx, contract.Item{Tenant: "human", ID: "h1"}, contract.Item{Tenant: "worker", ID: "m1"}), "Enqueue")
	ls, err := q.Claim(ctx, req)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %d leases, %v", len(ls), err)
	}
	since := clock.Now()
	must(q.Wait(ctx, ls[0], contract.WaitRequest{Signal: "approve", Timeout: time.Hour}), "Wait")
	marked := ls[1]
	if was, err := q.Cancel(ctx, marked.Key(), "operator"); err != nil || was != contract.StateLeased {
		t.Fatalf("Cancel of the lease = %q, %v", was, err)
	}
	must(q.Enqueue(ctx,
		contract.Item{Tenant: "acme", ID: "low"}, contract.Item{Tenant: "acme", ID: "high", Priority: 5},
		contract.Item{Tenant: "acme", ID: "mid", Priority: 2}, contract.Item{Tenant: "acme", ID: "gone", Priority: 9},
		contract.Item{Tenant: "beta", ID: "b1"}, contract.Item{Tenant: "gamma", ID: "g1"},
		contract.Item{Tenant: "acme", ID: "o1", Queue: "other"}), "Enqueue")
	if _, err := q.Cancel(ctx, key("acme", "gone"), "not needed"); err != nil {
		t.Fatal(err)
	}
	must(q.Pause(ctx, "", "gamma"), "Pause of tenant gamma")
	must(q.Pause(ctx, "other", ""), "Pause of queue other")
	closeFile()

	q, closeFile = open()
	defer closeFile()
	if ps, err := q.Paused(ctx, ""); err != nil || ps.Paused || !slices.Equal(ps.Tenants, []string{"gamma"}) {
		t.Fatalf("Paused(default) after the reopen = %+v, %v; want tenant gamma", ps, err)
	}
	if ps, err := q.Paused(ctx, "other"); err != nil || !ps.Paused {
		t.Fatalf("Paused(other) after the reopen = %+v, %v; want the queue paused", ps, err)
	}
	info, err := q.Item(ctx, key("human", "h1"))
	if w := info.Item.Waiting; err != nil || info.Item.State != contract.StateWaiting || w == nil || w.Signal != "approve" ||
		!w.Since.Equal(since) || !w.Until.Equal(since.Add(time.Hour)) {
		t.Fatalf("the waiting item after the reopen = %+v, %v", info.Item, err)
	}
	info, err = q.Item(ctx, key("acme", "gone"))
	if err != nil || info.Item.State != contract.StateCancelled || info.Item.CancelReason != "not needed" || info.Item.CancelledAt.IsZero() || info.Item.Priority != 9 {
		t.Fatalf("the cancelled item after the reopen = %+v, %v", info.Item, err)
	}
	info, err = q.Item(ctx, marked.Key())
	if err != nil || info.Item.State != contract.StateLeased || info.Lease == nil || info.Item.CancelReason != "operator" || info.Item.CancelledAt.IsZero() {
		t.Fatalf("the marked lease after the reopen = %+v, %v", info, err)
	}
	if err := q.Complete(ctx, marked); !errors.Is(err, contract.ErrCancelled) {
		t.Fatalf("Complete of the marked lease after the reopen = %v, want a *contract.CancelledError", err)
	}

	// The claim serves acme by priority, beta in its turn, passes the
	// paused gamma over, and skips the cancelled item.
	var r contract.ClaimReport
	ls, err = q.Claim(contract.WithClaimReport(ctx, &r), contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, l.Item.Tenant+"/"+l.Item.ID)
	}
	if want := []string{"acme/high", "beta/b1", "acme/mid", "acme/low"}; !slices.Equal(got, want) {
		t.Fatalf("the claim after the reopen served %v, want %v", got, want)
	}
	if r.Held[contract.HeldPaused] != 1 {
		t.Fatalf("the claim's report = %+v, want gamma passed over for its pause", r)
	}
	r = contract.ClaimReport{}
	if _, err := q.Claim(contract.WithClaimReport(ctx, &r), contract.ClaimRequest{Queue: "other", Worker: "w", LeaseFor: time.Hour, Max: 1}); !errors.Is(err, contract.ErrEmpty) || !r.QueuePaused {
		t.Fatalf("a claim of the paused queue after the reopen = %v, report %+v; want ErrEmpty, QueuePaused", err, r)
	}

	// A signal after the reopen resumes the wait once.
	clock.Advance(time.Minute)
	must(q.Signal(ctx, key("human", "h1"), "approve", []byte("yes")), "Signal after the reopen")
	if err := q.Signal(ctx, key("human", "h1"), "approve", nil); !errors.Is(err, contract.ErrNotWaiting) {
		t.Fatalf("a second Signal = %v, want ErrNotWaiting", err)
	}
	ls, err = q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 10})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "h1" {
		t.Fatalf("the claim after the signal = %v, %v; want h1", ls, err)
	}
	if res := ls[0].Item.Resumed; res == nil || res.Signal != "approve" || !bytes.Equal(res.Payload, []byte("yes")) || res.TimedOut {
		t.Fatalf("h1 resumed with %+v, want approve with its payload", res)
	}
	must(q.Resume(ctx, "", "gamma"), "Resume of gamma")
	if ls, err := q.Claim(ctx, req); err != nil || len(ls) != 1 || ls[0].Item.ID != "g1" {
		t.Fatalf("the claim after resuming gamma = %v, %v; want g1", ls, err)
	}
}
