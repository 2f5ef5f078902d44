package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

const leaseFor = 30 * time.Second

func newQueue(t *testing.T, settings ...memstore.Settings) (*memstore.Store, *contracttest.FakeClock) {
	t.Helper()
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	var s memstore.Settings
	if len(settings) > 0 {
		s = settings[0]
	}
	if s.Policy.MaxAttempts == 0 {
		s.Policy = policy.Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: policy.Fixed(1)}
	}
	return newStore(t, clock, s), clock
}

func enqueue(t *testing.T, s *memstore.Store, items ...contract.Item) {
	t.Helper()
	if err := s.Enqueue(t.Context(), items...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

func claim(t *testing.T, s *memstore.Store, max int) []contract.Lease {
	t.Helper()
	ls, err := s.Claim(t.Context(), contract.ClaimRequest{Worker: "w", LeaseFor: leaseFor, Max: max})
	if err != nil && !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("Claim: %v", err)
	}
	return ls
}

func tenantsOf(ls []contract.Lease) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Item.Tenant)
	}
	return out
}

func TestRotationOrder(t *testing.T) {
	s, clock := newQueue(t)
	for _, tenant := range []string{"a", "b", "c"} {
		for i := range 3 {
			enqueue(t, s, contract.Item{Tenant: tenant, ID: fmt.Sprint(i)})
		}
	}
	got := tenantsOf(claim(t, s, 4))
	if want := []string{"a", "b", "c", "a"}; !slices.Equal(got, want) {
		t.Fatalf("first claim served %v, want %v", got, want)
	}
	rot, err := s.Rotation(t.Context(), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "c", "a"}; !slices.Equal(rot.Order, want) {
		t.Fatalf("rotation order %v, want %v", rot.Order, want)
	}
	if len(rot.Recent) != 4 || rot.Recent[3].Tenant != "a" || rot.Recent[0].Tenant != "a" {
		t.Fatalf("recent turns %+v", rot.Recent)
	}

	// d is new: it joins behind everyone, a included.
	enqueue(t, s, contract.Item{Tenant: "d", ID: "0"})
	// e has only a delayed item: it takes its place but is skipped.
	enqueue(t, s, contract.Item{Tenant: "e", ID: "0", NotBefore: clock.Now().Add(time.Minute)})
	rot, _ = s.Rotation(t.Context(), "", 0)
	if want := []string{"b", "c", "a", "d", "e"}; !slices.Equal(rot.Order, want) {
		t.Fatalf("rotation order %v, want %v", rot.Order, want)
	}
	got = tenantsOf(claim(t, s, 10))
	if want := []string{"b", "c", "a", "d", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("second claim served %v, want %v", got, want)
	}
	if _, err := s.Claim(t.Context(), contract.ClaimRequest{LeaseFor: leaseFor, Max: 1}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("claim with only delayed work: %v, want ErrEmpty", err)
	}
	clock.Advance(time.Minute)
	if got := tenantsOf(claim(t, s, 10)); !slices.Equal(got, []string{"e"}) {
		t.Fatalf("after the delay: %v", got)
	}
}

func TestDelayedTenantKeepsItsPlace(t *testing.T) {
	s, clock := newQueue(t)
	now := clock.Now()
	enqueue(t, s,
		contract.Item{Tenant: "late", ID: "0", NotBefore: now.Add(time.Second)},
		contract.Item{Tenant: "x", ID: "0"}, contract.Item{Tenant: "x", ID: "1"},
		contract.Item{Tenant: "y", ID: "0"}, contract.Item{Tenant: "y", ID: "1"})
	if got := tenantsOf(claim(t, s, 2)); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("served %v", got)
	}
	if rot, _ := s.Rotation(t.Context(), "", 0); !slices.Equal(rot.Order, []string{"x", "y", "late"}) {
		t.Fatalf("rotation order before the delay %v", rot.Order)
	}
	clock.Advance(time.Second)
	// late never got a turn, so it is ahead of x and y, who were served.
	if rot, _ := s.Rotation(t.Context(), "", 0); !slices.Equal(rot.Order, []string{"late", "x", "y"}) {
		t.Fatalf("rotation order after the delay %v", rot.Order)
	}
	if got := tenantsOf(claim(t, s, 3)); !slices.Equal(got, []string{"late", "x", "y"}) {
		t.Fatalf("served %v", got)
	}
}

func TestTokensNeverRepeat(t *testing.T) {
	s, clock := newQueue(t)
	seen := map[int64]bool{}
	note := func(l contract.Lease) {
		if seen[l.Token] {
			t.Fatalf("token %d issued twice", l.Token)
		}
		seen[l.Token] = true
	}
	for round := range 3 {
		enqueue(t, s, contract.Item{Tenant: "a", ID: "same"})
		l := claim(t, s, 1)[0]
		note(l)
		l2, err := s.Heartbeat(t.Context(), l, leaseFor)
		if err != nil {
			t.Fatal(err)
		}
		note(l2)
		if round == 0 {
			if _, err := s.Fail(t.Context(), l2, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute) // past the retry's backoff
			continue
		}
		// The stale lease of the earlier round must not settle this one.
		if err := s.Complete(t.Context(), l); err == nil {
			t.Fatal("Complete with the pre-heartbeat token succeeded")
		}
		if err := s.Complete(t.Context(), l2); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHeartbeatNeedsALiveLease(t *testing.T) {
	s, clock := newQueue(t)
	enqueue(t, s, contract.Item{Tenant: "a", ID: "0"})
	l := claim(t, s, 1)[0]
	clock.Advance(leaseFor)
	_, err := s.Heartbeat(t.Context(), l, leaseFor)
	var lost *contract.LeaseLostError
	if !errors.As(err, &lost) || len(lost.Items) != 1 || lost.Items[0] != l.Key() {
		t.Fatalf("heartbeat of an expired lease: %v", err)
	}
	if n, _ := s.Reap(t.Context(), ""); n != 1 {
		t.Fatalf("Reap = %d, want 1", n)
	}
	info, err := s.Item(t.Context(), l.Key())
	if err != nil || info.Item.State != contract.StateQueued || info.Item.Attempts != 1 || info.Item.LastError != contract.ErrLeaseExpired.Error() {
		t.Fatalf("reaped item: %+v %v", info, err)
	}
}

func TestFailRetriesThenDeadLetters(t *testing.T) {
	s, clock := newQueue(t)
	enqueue(t, s, contract.Item{Tenant: "a", ID: "0", Metadata: map[string]string{"traceparent": "00-x"}})
	for attempt := 1; attempt <= 3; attempt++ {
		ls := claim(t, s, 1)
		if len(ls) != 1 {
			t.Fatalf("attempt %d: nothing to claim", attempt)
		}
		d, err := s.Fail(t.Context(), ls[0], fmt.Errorf("attempt %d", attempt))
		if err != nil {
			t.Fatal(err)
		}
		if attempt < 3 {
			want := clock.Now().Add(time.Second << (attempt - 1))
			if !d.Retry || !d.At.Equal(want) {
				t.Fatalf("attempt %d: decision %+v, want retry at %v", attempt, d, want)
			}
			clock.Set(d.At)
			continue
		}
		if d.Retry || d.Reason != policy.ReasonMaxAttempts {
			t.Fatalf("last attempt: decision %+v", d)
		}
	}
	page, err := s.DeadLetters(t.Context(), contract.DeadLetterQuery{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("dead letters: %+v %v", page, err)
	}
	dead := page.Items[0]
	if dead.Attempts != 3 || dead.LastError != "attempt 3" || !dead.DeadAt.Equal(clock.Now()) || dead.State != contract.StateDead || dead.Metadata["traceparent"] != "00-x" {
		t.Fatalf("dead letter %+v", dead)
	}
	if n, err := s.Requeue(t.Context(), contract.DeadLetterFilter{ErrorContains: "attempt 3"}); n != 1 || err != nil {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	l := claim(t, s, 1)[0]
	if l.Item.Attempts != 0 || l.Item.Metadata["traceparent"] != "00-x" {
		t.Fatalf("requeued item %+v", l.Item)
	}
}

func TestDeadLetterPagingAndFilters(t *testing.T) {
	s, _ := newQueue(t, memstore.Settings{Policy: policy.Policy{MaxAttempts: 1}})
	for i := range 25 {
		tenant := []string{"a", "b"}[i%2]
		enqueue(t, s, contract.Item{Tenant: tenant, ID: fmt.Sprint(i)})
	}
	for _, l := range claim(t, s, 25) {
		if _, err := s.Fail(t.Context(), l, fmt.Errorf("bad %s", l.Item.ID)); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	q := contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Tenant: "a"}, Page: contract.PageRequest{Limit: 4}}
	for pages := 0; ; pages++ {
		p, err := s.DeadLetters(t.Context(), q)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		if p.Next == "" {
			break
		}
		q.Page.Cursor = p.Next
	}
	if len(ids) != 13 || ids[0] != "0" || ids[12] != "24" {
		t.Fatalf("tenant a's dead letters: %v", ids)
	}
	if n, _ := s.Purge(t.Context(), contract.DeadLetterFilter{Tenant: "b", ID: "3"}); n != 1 {
		t.Fatalf("Purge of one = %d", n)
	}
	if n, _ := s.Purge(t.Context(), contract.DeadLetterFilter{ErrorContains: "bad 1"}); n != 11 { // ids 1 and 10..19
		t.Fatalf("Purge by error = %d", n)
	}
}

func TestInspector(t *testing.T) {
	s, clock := newQueue(t)
	ctx := t.Context()
	t0 := clock.Now()
	enqueue(t, s, contract.Item{Tenant: "a", ID: "0"}, contract.Item{Tenant: "a", ID: "1"},
		contract.Item{Tenant: "b", ID: "0", NotBefore: t0.Add(time.Hour)},
		contract.Item{Tenant: "c", ID: "0", Queue: "other"})
	clock.Advance(time.Second)
	enqueue(t, s, contract.Item{Tenant: "a", ID: "2"})
	ls := claim(t, s, 1)
	clock.Advance(time.Second)
	l2 := claim(t, s, 1)
	if qs, _ := s.Queues(ctx); !slices.Equal(qs, []string{"default", "other"}) {
		t.Fatalf("Queues = %v", qs)
	}
	stats, err := s.Tenants(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.TenantStats{
		{Tenant: "a", Ready: 1, Leased: 2, Served: 2, OldestReady: t0.Add(time.Second)},
		{Tenant: "b", Later: 1},
	}
	if !slices.Equal(stats, want) {
		t.Fatalf("Tenants = %+v, want %+v", stats, want)
	}
	page, err := s.Leases(ctx, "", contract.PageRequest{Limit: 1})
	if err != nil || len(page.Leases) != 1 || page.Leases[0].Token != ls[0].Token || page.Next == "" {
		t.Fatalf("first lease page %+v %v", page, err)
	}
	page, err = s.Leases(ctx, "", contract.PageRequest{Limit: 1, Cursor: page.Next})
	if err != nil || len(page.Leases) != 1 || page.Leases[0].Token != l2[0].Token || page.Next != "" {
		t.Fatalf("second lease page %+v %v", page, err)
	}
	info, err := s.Item(ctx, ls[0].Key())
	if err != nil || info.Lease == nil || info.Lease.Token != ls[0].Token || info.Item.State != contract.StateLeased {
		t.Fatalf("Item = %+v, %v", info, err)
	}
	if _, err := s.Item(ctx, contract.ItemKey{Tenant: "a", ID: "nope"}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("Item of a missing key: %v", err)
	}
	h, err := s.Health(ctx)
	if err != nil || h.Backing != "memory" || h.Status() != contract.HealthOK || h.Details["items leased"] != "2" {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	if _, err := s.Rotation(ctx, "", 1001); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("Rotation(1001): %v", err)
	}
}

func TestWakes(t *testing.T) {
	s, _ := newQueue(t)
	ch, stop := s.Subscribe("")
	other, stopOther := s.Subscribe("other")
	defer stopOther()
	enqueue(t, s, contract.Item{Tenant: "a", ID: "0"}, contract.Item{Tenant: "a", ID: "1"})
	select {
	case <-ch:
	default:
		t.Fatal("no wake after Enqueue")
	}
	select {
	case <-other:
		t.Fatal("a queue's enqueue woke another queue")
	default:
	}
	l := claim(t, s, 1)[0]
	if _, err := s.Fail(t.Context(), l, errors.New("again")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("no wake after a retry")
	}
	if st := s.Stats(); st.Wakes != 2 || st.LastWake.IsZero() {
		t.Fatalf("Stats = %+v", st)
	}
	stop()
	stop()
	enqueue(t, s, contract.Item{Tenant: "a", ID: "2"})
	select {
	case <-ch:
		t.Fatal("woken after unsubscribing")
	default:
	}
}

func TestQueueCancelledContextChangesNothing(t *testing.T) {
	s, _ := newQueue(t)
	enqueue(t, s, contract.Item{Tenant: "a", ID: "0"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Claim(ctx, contract.ClaimRequest{LeaseFor: leaseFor, Max: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Enqueue: %v", err)
	}
	if got := claim(t, s, 10); len(got) != 1 {
		t.Fatalf("after cancelled calls, claimed %d items, want 1", len(got))
	}
}

func TestCompleteBatchReportsLost(t *testing.T) {
	s, _ := newQueue(t)
	enqueue(t, s, contract.Item{Tenant: "a", ID: "0"}, contract.Item{Tenant: "b", ID: "0"})
	ls := claim(t, s, 2)
	stale := ls[1]
	stale.Token++
	err := s.Complete(t.Context(), ls[0], stale)
	var lost *contract.LeaseLostError
	if !errors.As(err, &lost) || !slices.Equal(lost.Items, []contract.ItemKey{stale.Key()}) {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := s.Item(t.Context(), ls[0].Key()); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("completed item still there: %v", err)
	}
	if err := s.Complete(t.Context(), ls[1]); err != nil {
		t.Fatalf("the untouched lease no longer completes: %v", err)
	}
}

func TestRecentTurnsRing(t *testing.T) {
	s, _ := newQueue(t, memstore.Settings{RecentTurns: 3})
	for i := range 5 {
		enqueue(t, s, contract.Item{Tenant: fmt.Sprint("t", i), ID: "x"})
	}
	for range 5 {
		claim(t, s, 1)
	}
	for n, want := range map[int][]string{0: nil, 2: {"t3", "t4"}, 3: {"t2", "t3", "t4"}, 10: {"t2", "t3", "t4"}} {
		rot, err := s.Rotation(t.Context(), "", n)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, turn := range rot.Recent {
			got = append(got, turn.Tenant)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Rotation(n %d).Recent = %v, want %v", n, got, want)
		}
	}
}

func TestCompleteAndClaim(t *testing.T) {
	s, _ := newQueue(t)
	for i := range 5 {
		enqueue(t, s, contract.Item{Tenant: "a", ID: fmt.Sprint(i)})
	}
	req := contract.ClaimRequest{Worker: "w", LeaseFor: leaseFor, Max: 2}
	held := claim(t, s, 2)
	stale := held[0]
	stale.Token++
	next, err := s.CompleteAndClaim(t.Context(), []contract.Lease{stale, held[1]}, req)
	var lle *contract.LeaseLostError
	if !errors.As(err, &lle) || len(lle.Items) != 1 || lle.Items[0] != stale.Key() {
		t.Fatalf("got %v, want a LeaseLostError naming %v", err, stale.Key())
	}
	if len(next) != 2 {
		t.Fatalf("claimed %d beside the lost lease, want 2", len(next))
	}
	// Max 0 only completes.
	if ls, err := s.CompleteAndClaim(t.Context(), append(next, held[0]), contract.ClaimRequest{}); err != nil || ls != nil {
		t.Fatalf("max 0: %v, %v", ls, err)
	}
	ls, err := s.CompleteAndClaim(t.Context(), nil, contract.ClaimRequest{LeaseFor: leaseFor, Max: 5})
	if err != nil || len(ls) != 1 {
		t.Fatalf("last item: %d leases, %v; want the one item left", len(ls), err)
	}
	if _, err := s.CompleteAndClaim(t.Context(), ls, req); !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("drained: %v, want ErrEmpty", err)
	}
	if _, err := s.CompleteAndClaim(t.Context(), []contract.Lease{{}}, req); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("bad lease: %v, want a ValidationError", err)
	}
}
