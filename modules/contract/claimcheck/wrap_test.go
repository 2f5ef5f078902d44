package claimcheck_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

const threshold = 64

type fixture struct {
	ctx   context.Context
	clock *contracttest.FakeClock
	store *memstore.Store
	cc    *claimcheck.Memory
	q     contract.WorkQueue
}

func newFixture(t *testing.T, settings ...memstore.Settings) *fixture {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	var s memstore.Settings
	if len(settings) > 0 {
		s = settings[0]
	}
	s.Policy = policy.Policy{MaxAttempts: 2, BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: policy.Fixed(1)}
	store := memstore.New(clock, s)
	cc := claimcheck.NewMemory()
	return &fixture{ctx: context.Background(), clock: clock, store: store, cc: cc, q: claimcheck.Wrap(store, cc, threshold)}
}

func big(tag string) []byte {
	return bytes.Repeat([]byte(tag), 4*threshold/len(tag)+1)
}

func (f *fixture) claim(t *testing.T, max int) []contract.Lease {
	t.Helper()
	leases, err := f.q.Claim(f.ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: max})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return leases
}

func (f *fixture) stored(t *testing.T, tenant, id string) contract.Item {
	t.Helper()
	info, err := f.store.Item(f.ctx, contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id})
	if err != nil {
		t.Fatalf("Item(%s/%s): %v", tenant, id, err)
	}
	return info.Item
}

func TestWrapOffloadsAndRestores(t *testing.T) {
	f := newFixture(t)
	payload := big("large ")
	err := f.q.Enqueue(f.ctx,
		contract.Item{Tenant: "a", ID: "big", Payload: payload, Metadata: map[string]string{"k": "v"}},
		contract.Item{Tenant: "b", ID: "small", Payload: []byte("inline")},
	)
	if err != nil {
		t.Fatal(err)
	}
	if f.cc.Len() != 1 {
		t.Fatalf("%d blobs stored, want 1 (only the payload above the threshold)", f.cc.Len())
	}
	st := f.stored(t, "a", "big")
	if len(st.Payload) != 0 || st.Metadata[claimcheck.MetadataKey] == "" || st.Metadata["k"] != "v" {
		t.Fatalf("stored item = payload %d bytes, metadata %v; want no payload, the reference and the caller's metadata", len(st.Payload), st.Metadata)
	}
	if got, want := st.Metadata[claimcheck.MetadataSizeKey], strconv.Itoa(len(payload)); got != want {
		t.Fatalf("size key = %q, want %q", got, want)
	}
	if small := f.stored(t, "b", "small"); string(small.Payload) != "inline" || small.Metadata[claimcheck.MetadataKey] != "" {
		t.Fatalf("small item was offloaded: %+v", small)
	}

	leases := f.claim(t, 10)
	if len(leases) != 2 {
		t.Fatalf("claimed %d, want 2", len(leases))
	}
	for _, l := range leases {
		switch l.Item.ID {
		case "big":
			if !bytes.Equal(l.Item.Payload, payload) {
				t.Fatalf("restored payload differs: %d bytes", len(l.Item.Payload))
			}
		case "small":
			if string(l.Item.Payload) != "inline" {
				t.Fatalf("small payload %q", l.Item.Payload)
			}
		}
	}
	if err := f.q.Complete(f.ctx, leases...); err != nil {
		t.Fatal(err)
	}
	if f.cc.Len() != 0 {
		t.Fatalf("%d blobs left after Complete, want 0", f.cc.Len())
	}
}

func TestWrapDoesNotMutateCallerItems(t *testing.T) {
	f := newFixture(t)
	md := map[string]string{"k": "v"}
	items := []contract.Item{{Tenant: "a", ID: "1", Payload: big("x"), Metadata: md}}
	if err := f.q.Enqueue(f.ctx, items...); err != nil {
		t.Fatal(err)
	}
	if len(md) != 1 || len(items[0].Payload) == 0 {
		t.Fatalf("caller's item was changed: metadata %v, payload %d bytes", md, len(items[0].Payload))
	}
}

func TestWrapRefusesReservedKeys(t *testing.T) {
	f := newFixture(t)
	for _, k := range []string{claimcheck.MetadataKey, claimcheck.MetadataSizeKey} {
		err := f.q.Enqueue(f.ctx,
			contract.Item{Tenant: "a", ID: "1", Payload: big("x")},
			contract.Item{Tenant: "a", ID: "2", Metadata: map[string]string{k: "forged"}},
		)
		if !errors.Is(err, contract.ErrInvalid) {
			t.Fatalf("Enqueue with %s in metadata: %v; want a validation error", k, err)
		}
	}
	if f.cc.Len() != 0 {
		t.Fatalf("a refused batch left %d blobs", f.cc.Len())
	}
	if _, err := f.q.Claim(f.ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}); !errors.Is(err, contract.ErrEmpty) {
		t.Fatalf("a refused batch enqueued something: %v", err)
	}
}

// Enqueueing an ID that is already live is a no-op; its new blob must not
// stay behind.
func TestWrapIdempotentEnqueueLeavesNoOrphan(t *testing.T) {
	f := newFixture(t)
	first := big("first ")
	for _, p := range [][]byte{first, big("second ")} {
		if err := f.q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: "1", Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	if f.cc.Len() != 1 {
		t.Fatalf("%d blobs after enqueueing the same ID twice, want 1", f.cc.Len())
	}
	l := f.claim(t, 1)[0]
	if !bytes.Equal(l.Item.Payload, first) {
		t.Fatal("the live item lost its own payload")
	}
}

// A batch the inner queue refuses leaves no blob behind.
func TestWrapInnerRefusalDeletesBlobs(t *testing.T) {
	f := newFixture(t, memstore.Settings{MaxValueBytes: threshold / 2})
	err := f.q.Enqueue(f.ctx,
		contract.Item{Tenant: "a", ID: "big", Payload: big("x")},
		contract.Item{Tenant: "a", ID: "medium", Payload: bytes.Repeat([]byte("m"), threshold)},
	)
	var tooLarge *contract.StatePersistenceError
	if !errors.As(err, &tooLarge) || tooLarge.Reason != contract.ReasonTooLarge {
		t.Fatalf("Enqueue: %v; want too_large from the inner queue", err)
	}
	if f.cc.Len() != 0 {
		t.Fatalf("%d blobs left after a refused batch", f.cc.Len())
	}
}

// A missing blob is a typed error, never an empty payload; the other
// leases of the batch are still handed out and the broken item goes to the
// dead letter with the reference in its error.
func TestWrapMissingBlob(t *testing.T) {
	f := newFixture(t)
	if err := f.q.Enqueue(f.ctx,
		contract.Item{Tenant: "a", ID: "lost", Payload: big("x")},
		contract.Item{Tenant: "b", ID: "fine", Payload: big("y")},
	); err != nil {
		t.Fatal(err)
	}
	ref := contract.Ref(f.stored(t, "a", "lost").Metadata[claimcheck.MetadataKey])
	if err := f.cc.Delete(f.ctx, "a", ref); err != nil {
		t.Fatal(err)
	}
	leases, err := f.q.Claim(f.ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	missing, ok := errors.AsType[*claimcheck.MissingBlobError](err)
	if !ok || !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("Claim error = %v; want a *MissingBlobError wrapping ErrNotFound", err)
	}
	if missing.Ref != ref || missing.Key.ID != "lost" {
		t.Fatalf("MissingBlobError = %+v", missing)
	}
	if len(leases) != 1 || leases[0].Item.ID != "fine" || len(leases[0].Item.Payload) == 0 {
		t.Fatalf("leases = %+v; want the one intact item with its payload", leases)
	}
	dead := f.stored(t, "a", "lost")
	if dead.State != contract.StateDead || !strings.Contains(dead.LastError, string(ref)) {
		t.Fatalf("broken item = state %s, error %q; want dead with the reference in its error", dead.State, dead.LastError)
	}
}

func TestWrapRetryDeadLetterRequeuePurge(t *testing.T) {
	f := newFixture(t)
	pa, pb := big("a"), big("b")
	if err := f.q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: "1", Payload: pa}, contract.Item{Tenant: "b", ID: "1", Payload: pb}); err != nil {
		t.Fatal(err)
	}
	// Two failed attempts each: retried once, then dead.
	for round := range 2 {
		for _, l := range f.claim(t, 10) {
			if _, err := f.q.Fail(f.ctx, l, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 {
			f.clock.Advance(time.Hour)
		}
	}
	if f.cc.Len() != 2 {
		t.Fatalf("%d blobs, want both kept through retry and dead letter", f.cc.Len())
	}
	page, err := f.q.DeadLetters(f.ctx, contract.DeadLetterQuery{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("DeadLetters = %d, %v", len(page.Items), err)
	}
	for _, it := range page.Items {
		if len(it.Payload) != 0 || it.Metadata[claimcheck.MetadataKey] == "" {
			t.Fatalf("a dead letter shows %d payload bytes and reference %q; want the reference only", len(it.Payload), it.Metadata[claimcheck.MetadataKey])
		}
	}
	if n, err := f.q.Requeue(f.ctx, contract.DeadLetterFilter{Tenant: "b"}); err != nil || n != 1 {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	l := f.claim(t, 1)[0]
	if l.Item.Tenant != "b" || !bytes.Equal(l.Item.Payload, pb) {
		t.Fatalf("requeued item came back as %s with %d bytes", l.Item.Tenant, len(l.Item.Payload))
	}
	if _, err := f.q.Fail(f.ctx, l, policy.Permanent(errors.New("again"))); err != nil {
		t.Fatal(err)
	}
	// Purging tenant a's dead letters deletes its blob and only its.
	if n, err := f.q.Purge(f.ctx, contract.DeadLetterFilter{Tenant: "a"}); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if f.cc.Len() != 1 {
		t.Fatalf("%d blobs after purging a, want b's alone", f.cc.Len())
	}
	if n, err := f.q.Purge(f.ctx, contract.DeadLetterFilter{}); err != nil || n != 1 {
		t.Fatalf("Purge all = %d, %v", n, err)
	}
	if f.cc.Len() != 0 {
		t.Fatalf("%d blobs after purging everything", f.cc.Len())
	}
}

func TestWrapHeartbeatAndLostLease(t *testing.T) {
	f := newFixture(t)
	payload := big("hb")
	if err := f.q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: "1", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	old := f.claim(t, 1)[0]
	renewed, err := f.q.Heartbeat(f.ctx, old, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Token == old.Token || !bytes.Equal(renewed.Item.Payload, payload) {
		t.Fatalf("heartbeat: token %d→%d, payload %d bytes", old.Token, renewed.Token, len(renewed.Item.Payload))
	}
	if err := f.q.Complete(f.ctx, old); !errors.As(err, new(*contract.LeaseLostError)) {
		t.Fatalf("Complete with the stale token: %v; want *LeaseLostError", err)
	}
	if f.cc.Len() != 1 {
		t.Fatal("a lost complete deleted the blob of an item another lease still holds")
	}
	if err := f.q.Complete(f.ctx, renewed); err != nil {
		t.Fatal(err)
	}
	if f.cc.Len() != 0 {
		t.Fatal("blob kept after the complete")
	}
}

// plainQueue hides every optional interface of the queue it holds.
type plainQueue struct{ contract.WorkQueue }

// The wrapper reports the capabilities of the queue it wraps: all of a
// memstore's, none of a plain queue's.
func TestWrapForwardsOptionalInterfacesOnlyWhenPresent(t *testing.T) {
	f := newFixture(t)
	if _, ok := contract.AsInspector(f.q); !ok {
		t.Error("wrapped memstore is not an Inspector")
	}
	if _, ok := contract.AsWaker(f.q); !ok {
		t.Error("wrapped memstore is not a Waker")
	}
	if _, ok := contract.AsStatsSource(f.q); !ok {
		t.Error("wrapped memstore is not a StatsSource")
	}
	plain := claimcheck.Wrap(plainQueue{f.store}, f.cc, threshold)
	if _, ok := contract.AsInspector(plain); ok {
		t.Error("wrapping a queue without an Inspector produced one")
	}
	if _, ok := contract.AsWaker(plain); ok {
		t.Error("wrapping a queue without a Waker produced one")
	}
	if _, ok := contract.AsStatsSource(plain); ok {
		t.Error("wrapping a queue without StatsSource produced one")
	}
	u, ok := f.q.(interface{ Unwrap() contract.WorkQueue })
	if !ok || u.Unwrap() != contract.WorkQueue(f.store) {
		t.Error("Unwrap does not return the inner queue")
	}
	// The forwarded Waker is the inner queue's: an enqueue through the
	// wrapper wakes a subscriber.
	w, _ := contract.AsWaker(f.q)
	ch, stop := w.Subscribe("")
	defer stop()
	if err := f.q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: "w", Payload: big("w")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("no wake after an enqueue through the wrapper")
	}
}

// Purge and Complete still do their job on a queue without an Inspector.
func TestWrapWithoutInspector(t *testing.T) {
	f := newFixture(t)
	q := claimcheck.Wrap(plainQueue{f.store}, f.cc, threshold)
	if err := q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: "1", Payload: big("x")}); err != nil {
		t.Fatal(err)
	}
	l, err := q.Claim(f.ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Fail(f.ctx, l[0], policy.Permanent(errors.New("bad"))); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Purge(f.ctx, contract.DeadLetterFilter{}); n != 1 || err != nil {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if f.cc.Len() != 0 {
		t.Fatal("purge left the blob")
	}
}

// CompleteAndClaim goes to the inner queue's in one call: the completed
// item's blob is deleted, the claimed item's payload restored.
func TestWrapCompleteAndClaimOffloads(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"c1", "c2"} {
		if err := f.q.Enqueue(f.ctx, contract.Item{Tenant: "a", ID: id, Payload: big(id)}); err != nil {
			t.Fatal(err)
		}
	}
	held, err := f.q.Claim(f.ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	cc, ok := contract.AsCompleteClaimer(f.q)
	if !ok {
		t.Fatal("wrapped memstore is not a CompleteClaimer")
	}
	next, err := cc.CompleteAndClaim(f.ctx, held, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil || len(next) != 1 {
		t.Fatalf("CompleteAndClaim: %d leases, %v; want 1, nil", len(next), err)
	}
	if next[0].Item.ID != "c2" || !bytes.Equal(next[0].Item.Payload, big("c2")) {
		t.Errorf("claimed %s with %d payload bytes; want c2 with its payload restored", next[0].Item.ID, len(next[0].Item.Payload))
	}
	if f.cc.Len() != 1 {
		t.Errorf("%d blobs kept; want 1, the completed item's deleted", f.cc.Len())
	}
}
