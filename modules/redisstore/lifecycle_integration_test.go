//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// TestLifecycleSurvivesReopen: pauses, a waiting item, a cancelled item,
// a marked lease and prioritised items are all kept in Redis, so a second
// queue value over the same client and namespace sees every one of them.
func TestLifecycleSurvivesReopen(t *testing.T) {
	client := redistest.Client(t)
	lifecycleReopen(t, client, redistest.Namespace(t, client))
}

func lifecycleReopen(t *testing.T, client redis.UniversalClient, ns string) {
	ctx := context.Background()
	clock := contracttest.NewFakeClock(time.Time{})
	settings := redisstore.Settings{Namespace: ns, Policy: policy.Policy{Jitter: policy.Fixed(0)}}
	open := func() *redisstore.RedisWorkQueue {
		q, err := redisstore.NewQueue(client, clock, settings)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	claim := func(q *redisstore.RedisWorkQueue, max int) []contract.Lease {
		t.Helper()
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: max})
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	key := func(tenant, id string) contract.ItemKey {
		return contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id}
	}
	q := open()
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "wait"}, contract.Item{Tenant: "acme", ID: "held"}))
	ls := claim(q, 2)
	must(t, q.Wait(ctx, ls[0], contract.WaitRequest{Signal: "approve", Timeout: time.Hour}))
	if st, err := q.Cancel(ctx, ls[1].Key(), "stop"); err != nil || st != contract.StateLeased {
		t.Fatalf("Cancel of a lease = %q, %v; want leased", st, err)
	}
	must(t, q.Enqueue(ctx,
		contract.Item{Tenant: "acme", ID: "gone"},
		contract.Item{Tenant: "acme", ID: "low", Priority: -5},
		contract.Item{Tenant: "acme", ID: "plain"},
		contract.Item{Tenant: "acme", ID: "high", Priority: 7},
		contract.Item{Tenant: "acme", ID: "later", Priority: 9, NotBefore: clock.Now().Add(time.Minute)},
		contract.Item{Tenant: "quiet", ID: "q1"}))
	if _, err := q.Cancel(ctx, key("acme", "gone"), "dup"); err != nil {
		t.Fatal(err)
	}
	must(t, q.Pause(ctx, "", "quiet"))
	must(t, q.Pause(ctx, "", ""))

	r := open() // a second queue value: everything below is read from Redis
	ps, err := r.Paused(ctx, "")
	must(t, err)
	if !ps.Paused || !slices.Equal(ps.Tenants, []string{"quiet"}) {
		t.Fatalf("Paused after reopening = %+v; want the queue and quiet", ps)
	}
	info := func(id string) contract.Item {
		t.Helper()
		in, err := r.Item(ctx, key("acme", id))
		must(t, err)
		return in.Item
	}
	if it := info("wait"); it.State != contract.StateWaiting || it.Waiting == nil || it.Waiting.Signal != "approve" ||
		!it.Waiting.Until.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("the waiting item after reopening = %+v", it)
	}
	if it := info("gone"); it.State != contract.StateCancelled || it.CancelReason != "dup" || it.CancelledAt.IsZero() {
		t.Fatalf("the cancelled item after reopening = %+v", it)
	}
	if it := info("held"); it.State != contract.StateLeased || it.CancelReason != "stop" || it.CancelledAt.IsZero() {
		t.Fatalf("the marked lease after reopening = %+v", it)
	}
	if it := info("high"); it.Priority != 7 {
		t.Fatalf("the prioritised item after reopening = %+v", it)
	}
	if _, err := r.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("a claim of the paused queue after reopening: %v; want ErrEmpty", err)
	}
	wantCancelled := func(err error, what string) {
		t.Helper()
		var ce *contract.CancelledError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: %v; want a *contract.CancelledError", what, err)
		}
	}
	wantCancelled(r.Complete(ctx, ls[1]), "Complete of the marked lease through the second queue")
	must(t, r.Resume(ctx, "", ""))
	clock.Advance(time.Minute) // "later" falls due: priority 9 goes first
	must(t, r.Signal(ctx, key("acme", "wait"), "approve", []byte("yes")))
	var got []string
	for _, l := range claim(r, 10) {
		got = append(got, l.Item.ID)
		if l.Item.ID == "wait" && (l.Item.Resumed == nil || string(l.Item.Resumed.Payload) != "yes") {
			t.Errorf("the resumed item's lease = %+v; want the signal's payload", l.Item)
		}
	}
	if want := []string{"later", "high", "plain", "wait", "low"}; !slices.Equal(got, want) {
		t.Fatalf("the claim after reopening served %v; want %v (priority, then due time; quiet stays paused)", got, want)
	}
}

// TestCancelMatchingChunks: a bulk cancel larger than one script call's
// chunk cancels exactly what its filter selects, in every state, and
// counts the same beforehand.
func TestCancelMatchingChunks(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
	must(t, err)
	defer q.Close()
	var items []contract.Item
	for i := range 700 {
		items = append(items, contract.Item{Tenant: "acme", ID: fmt.Sprintf("job-%03d", i)},
			contract.Item{Tenant: "acme", ID: fmt.Sprintf("keep-%03d", i)},
			contract.Item{Tenant: "other", ID: fmt.Sprintf("job-%03d", i)})
	}
	must(t, q.Enqueue(ctx, items...))
	// Some of each tenant leased, and one of acme's jobs waiting.
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 20})
	must(t, err)
	for _, l := range ls {
		if l.Item.Tenant == "acme" && l.Item.ID == "job-000" {
			must(t, q.Wait(ctx, l, contract.WaitRequest{Signal: "s", Timeout: time.Hour}))
		}
	}
	f := contract.CancelFilter{Tenant: "acme", IDPrefix: "job-"}
	n, err := q.CountMatching(ctx, f)
	must(t, err)
	if n != 700 {
		t.Fatalf("CountMatching = %d; want 700", n)
	}
	if n, err = q.CancelMatching(ctx, f, "bulk"); err != nil || n != 700 {
		t.Fatalf("CancelMatching = %d, %v; want 700", n, err)
	}
	if n, err = q.CountMatching(ctx, f); err != nil || n != 0 {
		t.Fatalf("CountMatching after the cancel = %d, %v; want 0 (marked leases are not counted again)", n, err)
	}
	ts, err := q.Tenants(ctx, "")
	must(t, err)
	for _, s := range ts {
		switch s.Tenant {
		case "acme":
			if s.Ready+s.Later+s.Waiting != 700-int64(countLeased(ls, "acme", "keep-")) || s.Cancelled == 0 {
				t.Errorf("acme after the cancel: %+v", s)
			}
		case "other":
			if s.Cancelled != 0 || s.Ready+s.Leased != 700 {
				t.Errorf("other after the cancel (outside the filter): %+v", s)
			}
		}
	}
}

func countLeased(ls []contract.Lease, tenant, prefix string) int {
	n := 0
	for _, l := range ls {
		if l.Item.Tenant == tenant && len(l.Item.ID) >= len(prefix) && l.Item.ID[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// TestPriorityOrderAcrossRefills: a tenant's prioritised items come in
// priority, due time, enqueue order even when a claim reads its items in
// several ranges (a batch larger than its share), in the plain rounds and
// in the walk a paused tenant sends the claim to.
func TestPriorityOrderAcrossRefills(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(fmt.Sprintf("walk=%v", walk), func(t *testing.T) {
			ctx := context.Background()
			client := redistest.Client(t)
			clock := contracttest.NewFakeClock(time.Time{})
			q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
			must(t, err)
			defer q.Close()
			type want struct {
				id  string
				pri int
				seq int
			}
			var items []contract.Item
			var ws []want
			for i := range 60 {
				p := (i*7)%11 - 5
				id := fmt.Sprintf("a-%02d", i)
				items = append(items, contract.Item{Tenant: "a", ID: id, Priority: p})
				ws = append(ws, want{id, p, i})
			}
			items = append(items, contract.Item{Tenant: "b", ID: "b"}, contract.Item{Tenant: "c", ID: "c"}, contract.Item{Tenant: "z", ID: "z"})
			must(t, q.Enqueue(ctx, items...))
			if walk {
				must(t, q.Pause(ctx, "", "z"))
			}
			slices.SortStableFunc(ws, func(x, y want) int { return y.pri - x.pri })
			var got []string
			for {
				ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 20})
				if errors.Is(err, contract.ErrEmpty) {
					break
				}
				must(t, err)
				for _, l := range ls {
					if l.Item.Tenant == "a" {
						got = append(got, l.Item.ID)
					}
				}
				must(t, q.Complete(ctx, ls...))
			}
			if len(got) != len(ws) {
				t.Fatalf("served %d of a's %d items", len(got), len(ws))
			}
			for i := range ws {
				if got[i] != ws[i].id {
					t.Fatalf("a's items came as %v; want priority then enqueue order (%d-th is %s, want %s)", got, i, got[i], ws[i].id)
				}
			}
		})
	}
}

// TestOldestReadyCountsPriorities checks that Tenants reads a tenant's
// oldest due item from its priority section as well as its plain items.
func TestOldestReadyCountsPriorities(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
	must(t, err)
	defer q.Close()
	first := clock.Now()
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "high", Priority: 3}, contract.Item{Tenant: "b", ID: "low", Priority: -3}))
	clock.Advance(time.Second)
	must(t, q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "plain"}, contract.Item{Tenant: "b", ID: "plain"}))
	ts, err := q.Tenants(ctx, "")
	must(t, err)
	if len(ts) != 2 {
		t.Fatalf("Tenants = %+v, want a and b", ts)
	}
	for _, st := range ts {
		if st.Ready != 2 || !st.OldestReady.Equal(first) {
			t.Errorf("tenant %s: Ready %d, OldestReady %v; want 2 and %v (its prioritised item)", st.Tenant, st.Ready, st.OldestReady, first)
		}
	}
}

// TestCancelLastDueItemsInOneCall checks where a bulk cancel that takes
// a tenant's last due items (plain and prioritised, in one script call)
// leaves the tenant: out of the rotation, waiting for its delayed item.
func TestCancelLastDueItemsInOneCall(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
	must(t, err)
	defer q.Close()
	must(t, q.Enqueue(ctx,
		contract.Item{Tenant: "a", ID: "due-1"},
		contract.Item{Tenant: "a", ID: "due-2", Priority: 4},
		contract.Item{Tenant: "a", ID: "due-3", Priority: -4},
		contract.Item{Tenant: "a", ID: "later", NotBefore: clock.Now().Add(time.Minute)},
		contract.Item{Tenant: "b", ID: "b"}))
	n, err := q.CancelMatching(ctx, contract.CancelFilter{Tenant: "a", IDPrefix: "due-"}, "test")
	must(t, err)
	if n != 3 {
		t.Fatalf("CancelMatching = %d, want 3", n)
	}
	claimIDs := func() []string {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: 10})
		if errors.Is(err, contract.ErrEmpty) {
			return nil
		}
		must(t, err)
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.Item.ID)
		}
		return ids
	}
	if got := claimIDs(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("claim after the cancel = %v, want [b]", got)
	}
	clock.Advance(time.Minute)
	if got := claimIDs(); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("claim once a's delayed item is due = %v, want [later]", got)
	}
}
