//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
)

// parkQueue is a queue of d on its pool with a fake clock and a policy
// whose backoff is exact: 10 s before the second attempt, 20 s before
// the third, which is the last.
func parkQueue(t *testing.T, d *testDB) (*pgstore.PostgresWorkQueue, *contracttest.FakeClock) {
	t.Helper()
	clock := &contracttest.FakeClock{}
	p := policy.Policy{MaxAttempts: 3, BaseDelay: 10 * time.Second, Jitter: policy.Fixed(1)}
	q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p}))
	if err != nil {
		t.Fatal(err)
	}
	return q, clock
}

// wakeAt reads tenant's wake_at in the default queue: forever for
// 'infinity', the zero time for '-infinity' (never parked).
func (d *testDB) wakeAt(t *testing.T, ctx context.Context, tenant string) (at time.Time, forever bool) {
	t.Helper()
	var finite *time.Time
	err := d.pool.QueryRow(ctx, `SELECT wake_at = 'infinity', CASE WHEN isfinite(wake_at) THEN wake_at END
		FROM adk_queue_turns WHERE queue = $1 AND tenant = $2`, contract.DefaultQueue, tenant).Scan(&forever, &finite)
	if err != nil {
		t.Fatalf("read wake_at of %s: %v", tenant, err)
	}
	if finite != nil {
		at = *finite
	}
	return at, forever
}

// claimIDs claims up to 10 items and returns their tenant/id, sorted.
func claimIDs(t *testing.T, ctx context.Context, q contract.WorkQueue) ([]string, []contract.Lease) {
	t.Helper()
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil && !errors.Is(err, contract.ErrEmpty) {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.Item.Tenant+"/"+l.Item.ID)
	}
	slices.Sort(ids)
	return ids, ls
}

func complete(t *testing.T, ctx context.Context, q contract.WorkQueue, ls []contract.Lease) {
	t.Helper()
	if err := q.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
}

// idleUnparked leaves tenant holding one item, due at later, and nothing
// due, unparked: it joins with an item due at once (a tenant whose items
// are all delayed joins parked), which is then served. The Complete of
// that item runs q's first park pass, which parks the tenant; its turn
// row is then woken by hand, as a tenant left by a pass that ran while it
// still had work would stand. q must hold nothing else due.
func idleUnparked(t *testing.T, ctx context.Context, d *testDB, q contract.WorkQueue, tenant string, later time.Time) {
	t.Helper()
	if err := q.Enqueue(ctx, contract.Item{Tenant: tenant, ID: "first"}, contract.Item{Tenant: tenant, ID: "later", NotBefore: later}); err != nil {
		t.Fatal(err)
	}
	ids, ls := claimIDs(t, ctx, q)
	if !slices.Equal(ids, []string{tenant + "/first"}) {
		t.Fatalf("claim of %s's first item: %v", tenant, ids)
	}
	complete(t, ctx, q, ls)
	if at, _ := d.wakeAt(t, ctx, tenant); !at.Equal(later) {
		t.Fatalf("%s parked until %v by the Complete's park pass, want %v (its item due then)", tenant, at, later)
	}
	if _, err := d.pool.Exec(ctx, "UPDATE adk_queue_turns SET wake_at = '-infinity' WHERE queue = $1 AND tenant = $2", contract.DefaultQueue, tenant); err != nil {
		t.Fatal(err)
	}
}

// awaitServer polls query, which returns one boolean, on d's pool until
// it is true, failing with what after 10 s. It watches the server for a
// waiter; it stands in for no clock.
func (d *testDB) awaitServer(t *testing.T, ctx context.Context, what, query string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var ok bool
		if err := d.pool.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
	}
	t.Fatal(what)
}

// A tenant with nothing due is parked, and every way an item of it
// becomes due wakes it: a new item, a retry, a reaped lease, a requeued
// dead letter, and time reaching its earliest item. A parked tenant is
// never looked at again by the park pass, so a path that forgot to wake
// it would leave its item unclaimed for good.
func TestParkedTenantWakesOnEveryPathToDue(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	start := clock.Now()
	hour := start.Add(time.Hour)
	if err := q.Enqueue(ctx,
		contract.Item{Tenant: "later", ID: "x", NotBefore: hour},
		contract.Item{Tenant: "worked", ID: "a"},
		contract.Item{Tenant: "dead", ID: "a"},
	); err != nil {
		t.Fatal(err)
	}
	ids, ls := claimIDs(t, ctx, q)
	if want := []string{"dead/a", "worked/a"}; !slices.Equal(ids, want) {
		t.Fatalf("first claim: %v, want %v", ids, want)
	}
	var worked contract.Lease
	for _, l := range ls {
		if l.Item.Tenant == "dead" {
			if _, err := q.Fail(ctx, l, policy.Permanent(errors.New("bad input"))); err != nil {
				t.Fatal(err)
			}
		} else {
			worked = l
		}
	}
	if _, err := q.Reap(ctx, ""); err != nil { // runs a park pass
		t.Fatal(err)
	}
	if at, _ := d.wakeAt(t, ctx, "later"); !at.Equal(hour) {
		t.Fatalf("later parked until %v, want its item's due time %v", at, hour)
	}
	for _, tenant := range []string{"worked", "dead"} {
		if _, forever := d.wakeAt(t, ctx, tenant); !forever {
			t.Fatalf("%s, holding nothing queued, is not parked for good", tenant)
		}
	}

	t.Run("enqueue", func(t *testing.T) {
		if err := q.Enqueue(ctx, contract.Item{Tenant: "later", ID: "now"}); err != nil {
			t.Fatal(err)
		}
		ids, ls := claimIDs(t, ctx, q)
		if !slices.Equal(ids, []string{"later/now"}) {
			t.Fatalf("claim after enqueueing a due item for a parked tenant: %v, want [later/now]", ids)
		}
		complete(t, ctx, q, ls)
	})
	t.Run("retry", func(t *testing.T) {
		dec, err := q.Fail(ctx, worked, errors.New("try again"))
		if err != nil || !dec.Retry {
			t.Fatalf("Fail = %+v, %v; want a retry", dec, err)
		}
		if at, forever := d.wakeAt(t, ctx, "worked"); forever || at.After(dec.At) {
			t.Fatalf("worked parked until %v (forever: %v) after a retry due at %v", at, forever, dec.At)
		}
		clock.Set(dec.At)
		ids, ls := claimIDs(t, ctx, q)
		if !slices.Equal(ids, []string{"worked/a"}) {
			t.Fatalf("claim at the retry's due time: %v, want [worked/a]", ids)
		}
		worked = ls[0]
	})
	t.Run("reap", func(t *testing.T) {
		if _, err := q.Reap(ctx, ""); err != nil { // parks worked again: its item is leased
			t.Fatal(err)
		}
		if _, forever := d.wakeAt(t, ctx, "worked"); !forever {
			t.Fatal("worked, its only item leased, is not parked for good")
		}
		clock.Set(worked.ExpiresAt)
		if n, err := q.Reap(ctx, ""); err != nil || n != 1 {
			t.Fatalf("Reap after the lease expired = %d, %v; want 1", n, err)
		}
		clock.Advance(20 * time.Second)
		ids, ls := claimIDs(t, ctx, q)
		if !slices.Equal(ids, []string{"worked/a"}) {
			t.Fatalf("claim at the reaped item's retry time: %v, want [worked/a]", ids)
		}
		complete(t, ctx, q, ls)
	})
	t.Run("requeue", func(t *testing.T) {
		n, err := q.Requeue(ctx, contract.DeadLetterFilter{Tenant: "dead"})
		if err != nil || n != 1 {
			t.Fatalf("Requeue = %d, %v; want 1", n, err)
		}
		ids, ls := claimIDs(t, ctx, q)
		if !slices.Equal(ids, []string{"dead/a"}) {
			t.Fatalf("claim after requeueing a parked tenant's dead letter: %v, want [dead/a]", ids)
		}
		complete(t, ctx, q, ls)
	})
	t.Run("time", func(t *testing.T) {
		clock.Set(hour.Add(-time.Second))
		if ids, _ := claimIDs(t, ctx, q); len(ids) != 0 {
			t.Fatalf("claim a second before later/x is due: %v, want nothing", ids)
		}
		clock.Set(hour)
		if ids, _ := claimIDs(t, ctx, q); !slices.Equal(ids, []string{"later/x"}) {
			t.Fatalf("claim when later/x is due: %v, want [later/x]", ids)
		}
	})
}

// A park pass leaves alone a tenant whose enqueue is in flight: the
// enqueue holds the shared side of the tenant's turn lock until it
// commits, and the pass parks only what it can lock exclusively. Had it
// parked the tenant on what it could see (an item due in an hour), the
// item the enqueue commits next would wait that hour.
func TestParkSkipsTenantWithEnqueueInFlight(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	idleUnparked(t, ctx, d, q, "t", clock.Now().Add(time.Hour))
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := q.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "t", ID: "now"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Reap(ctx, ""); err != nil { // the park pass
		t.Fatal(err)
	}
	if at, forever := d.wakeAt(t, ctx, "t"); forever || !at.IsZero() {
		t.Fatalf("t parked until %v (forever: %v) while its enqueue was in flight", at, forever)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := claimIDs(t, ctx, q); !slices.Equal(ids, []string{"t/now"}) {
		t.Fatalf("claim after the enqueue committed: %v, want [t/now]", ids)
	}
	// Nothing in flight now: the pass parks t until its other item.
	if _, err := q.Reap(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if at, _ := d.wakeAt(t, ctx, "t"); !at.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("t parked until %v once idle, want an hour from now", at)
	}
}

// An enqueue that waits behind a park of its tenant wakes the tenant the
// park put to sleep. The park is done by hand here, stopped between its
// lock and its update, which is the order the race needs: the enqueue
// starts, waits for the lock, the park commits, the enqueue goes on. The
// enqueue's statement that writes must begin after its lock is granted,
// or its snapshot predates the park and it sees nothing to wake.
func TestEnqueueBehindParkWakesTenant(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	tenant := "t-" + d.schema // advisory locks are database-wide
	later := clock.Now().Add(time.Hour)
	idleUnparked(t, ctx, d, q, tenant, later)
	parker, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parker.Rollback(ctx) }()
	lockKey := `hashtext('adk_queue_turns'), hashtext($1 || chr(31) || $2)`
	if _, err := parker.Exec(ctx, "SELECT pg_advisory_xact_lock("+lockKey+")", contract.DefaultQueue, tenant); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Enqueue(ctx, contract.Item{Tenant: tenant, ID: "now"}) }()
	d.awaitServer(t, ctx, "the enqueue never waited for the park's lock", `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
		AND objid::bigint = (hashtext($1 || chr(31) || $2)::bigint + 4294967296) % 4294967296)`, contract.DefaultQueue, tenant)
	if _, err := parker.Exec(ctx, "UPDATE adk_queue_turns SET wake_at = $3 WHERE queue = $1 AND tenant = $2", contract.DefaultQueue, tenant, later); err != nil {
		t.Fatal(err)
	}
	if err := parker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ids, _ := claimIDs(t, ctx, q); !slices.Equal(ids, []string{tenant + "/now"}) {
		t.Fatalf("claim after the enqueue that waited behind the park: %v, want [%s/now]", ids, tenant)
	}
}

// Parked tenants cost a claim nothing: with one busy tenant beside 49
// whose items are due in an hour, the claim's first round probes one
// tenant, not fifty. auto_explain with ANALYZE counts the probes: the
// loops of the first round's locking scan.
func TestParkedTenantsAreNotProbed(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	conn, q := newIdleBesideBusy(t, ctx, 20)
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 5}); err != nil {
		t.Fatal(err)
	}
	plan := conn.plan(t, "WITH RECURSIVE")
	round1, _, _ := strings.Cut(plan, "WorkTable Scan on pick p")
	if _, loops := lockScan(t, round1, plan); loops != 1 {
		t.Errorf("the first round probed %d tenants for one busy tenant beside 49 parked ones; want 1:\n%s", loops, plan)
	}
}

// A queue whose executor is the caller's transaction does not park from
// its claims: the pass's exclusive turn locks would be held until the
// caller commits, stalling every enqueue of those tenants elsewhere.
func TestClaimInCallersTransactionDoesNotPark(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	idleUnparked(t, ctx, d, q, "idle", clock.Now().Add(time.Hour))
	if err := q.Enqueue(ctx, contract.Item{Tenant: "busy", ID: "now"}); err != nil {
		t.Fatal(err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	inTx, err := pgstore.NewQueue(tx, clock, d.settings(pgstore.Settings{}))
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := claimIDs(t, ctx, inTx); !slices.Equal(ids, []string{"busy/now"}) {
		t.Fatalf("claim in the caller's transaction: %v, want [busy/now]", ids)
	}
	var pid int
	if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", pid).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("the caller's transaction holds %d advisory locks after a claim", held)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if at, forever := d.wakeAt(t, ctx, "idle"); forever || !at.IsZero() {
		t.Errorf("idle parked until %v (forever: %v) by a claim in the caller's transaction", at, forever)
	}
}

// A tenant whose first items are all delayed joins the rotation parked
// until the earliest of them is due, as a park pass would leave it, so
// claims never probe it before then; one with an item due at once joins
// unparked. Time reaching the item serves it.
func TestNewTenantOfDelayedItemsStartsParked(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	soon, later := clock.Now().Add(time.Minute), clock.Now().Add(time.Hour)
	if err := q.Enqueue(ctx,
		contract.Item{Tenant: "delayed", ID: "b", NotBefore: later},
		contract.Item{Tenant: "delayed", ID: "a", NotBefore: soon},
		contract.Item{Tenant: "due", ID: "a"},
	); err != nil {
		t.Fatal(err)
	}
	if at, forever := d.wakeAt(t, ctx, "delayed"); forever || !at.Equal(soon) {
		t.Fatalf("delayed joined parked until %v (forever: %v), want its earliest item's due time %v", at, forever, soon)
	}
	if at, forever := d.wakeAt(t, ctx, "due"); forever || !at.IsZero() {
		t.Fatalf("due joined parked until %v (forever: %v), want unparked", at, forever)
	}
	if ids, _ := claimIDs(t, ctx, q); !slices.Equal(ids, []string{"due/a"}) {
		t.Fatalf("claim before anything delayed is due: %v, want [due/a]", ids)
	}
	clock.Advance(time.Minute)
	if ids, _ := claimIDs(t, ctx, q); !slices.Equal(ids, []string{"delayed/a"}) {
		t.Fatalf("claim when the first delayed item is due: %v, want [delayed/a]", ids)
	}
}

// Two enqueues bring a new tenant in at once, the first with an item due
// in an hour, the second with one due now, whose statement starts before
// the first commits: its snapshot does not hold the first's turn row, so
// it wakes the tenant through the insert's conflict with that row. Left
// parked, the item due now would wait an hour.
func TestConcurrentEnqueuesOfNewTenantWakeIt(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	first, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(ctx) }()
	if err := q.Bound(first).Enqueue(ctx, contract.Item{Tenant: "new", ID: "later", NotBefore: clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	second, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Rollback(ctx) }()
	var pid int
	if err := second.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- q.Bound(second).Enqueue(ctx, contract.Item{Tenant: "new", ID: "now"}) }()
	d.awaitServer(t, ctx, "the second enqueue never waited for the first's turn row",
		"SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1", pid)
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := claimIDs(t, ctx, q); !slices.Equal(ids, []string{"new/now"}) {
		t.Fatalf("claim after both enqueues committed: %v, want [new/now]", ids)
	}
}

// Tenants drained faster than a park pass can take them (a chunk of 500
// a second) are parked by one pass per claim until none is left, not by
// one chunk a second: 1,200 tenants served their only item are all
// parked by the three claims after the pass comes due, with the clock
// standing still.
func TestParkPassesKeepUpWithManyIdleTenants(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	const tenants = 1200
	items := make([]contract.Item, tenants)
	for i := range items {
		items[i] = contract.Item{Tenant: fmt.Sprintf("t%04d", i), ID: "only"}
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for served := 0; served < tenants; {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 100})
		if err != nil {
			t.Fatalf("claim after %d served: %v", served, err)
		}
		served += len(ls)
	}
	awake := func() (n int) {
		t.Helper()
		if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM adk_queue_turns WHERE queue = $1 AND wake_at <= $2",
			contract.DefaultQueue, clock.Now()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := awake(); n != tenants {
		t.Fatalf("%d tenants awake before the park pass is due, want all %d", n, tenants)
	}
	clock.Advance(time.Second)
	for range 3 {
		if ids, _ := claimIDs(t, ctx, q); len(ids) != 0 {
			t.Fatalf("claim of the drained queue = %v, want nothing", ids)
		}
	}
	if n := awake(); n != 0 {
		t.Fatalf("%d of %d idle tenants still awake after three claims; want each claim to park a chunk while a pass finds a whole one", n, tenants)
	}
}

// A claim that hands out work runs no park pass: a woken worker waits for
// that claim, and a pass is three round trips more. The Complete of the
// work runs the pass that is due, and so does a claim that finds nothing.
func TestParkPassRunsAfterCompleteNotBeforeClaim(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	q, clock := parkQueue(t, d)
	later := clock.Now().Add(time.Hour)
	idleUnparked(t, ctx, d, q, "idle", later)
	clock.Advance(time.Second) // the next pass is due
	if err := q.Enqueue(ctx, contract.Item{Tenant: "busy", ID: "now"}); err != nil {
		t.Fatal(err)
	}
	ids, ls := claimIDs(t, ctx, q)
	if !slices.Equal(ids, []string{"busy/now"}) {
		t.Fatalf("claim: %v, want [busy/now]", ids)
	}
	if at, forever := d.wakeAt(t, ctx, "idle"); forever || !at.IsZero() {
		t.Fatalf("idle parked until %v (forever: %v) by a claim that handed out work", at, forever)
	}
	complete(t, ctx, q, ls)
	if at, _ := d.wakeAt(t, ctx, "idle"); !at.Equal(later) {
		t.Fatalf("idle parked until %v after the Complete, want %v", at, later)
	}
	if _, err := d.pool.Exec(ctx, "UPDATE adk_queue_turns SET wake_at = '-infinity' WHERE queue = $1 AND tenant = 'idle'", contract.DefaultQueue); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if ids, _ := claimIDs(t, ctx, q); len(ids) != 0 {
		t.Fatalf("claim of a drained queue: %v, want nothing", ids)
	}
	if at, _ := d.wakeAt(t, ctx, "idle"); !at.Equal(later) {
		t.Fatalf("idle parked until %v after a claim that found nothing, want %v", at, later)
	}
}
