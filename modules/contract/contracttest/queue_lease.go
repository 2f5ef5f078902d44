package contracttest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueLeaseCases pin leases on the fake clock: heartbeats keep them,
// silence loses them to Reap, stale tokens change nothing, and a token is
// never issued twice for one item: each is greater than every earlier one.
func queueLeaseCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"HeartbeatKeepsLease", testHeartbeatKeeps},
		{"SilenceLosesLease", testSilenceLoses},
		{"ReapDeadLettersAtLastAttempt", testReapToDead},
		{"ReapCounts", testReapCounts},
		{"StaleTokenAfterReclaim", testStaleAfterReclaim},
		{"StaleTokenWhileRequeued", testStaleWhileRequeued},
		{"ReaperLosesToHeartbeat", testReaperLosesToHeartbeat},
		{"ReaperRacesHeartbeat", testReaperRacesHeartbeat},
		{"CompletedOrForgedTokenLost", testCompletedOrForged},
		{"TokensNeverReused", testTokensNeverReused},
		{"TokensIncrease", testTokensIncrease},
	}
}

// reap runs Reap on the default queue and fails unless it reaped want.
func reap(t *testing.T, q contract.WorkQueue, want int, what string) {
	t.Helper()
	n, err := q.Reap(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Reap (%s)", what)
	if n != want {
		t.Errorf("Reap (%s) returned %d, want %d", what, n, want)
	}
}

func testHeartbeatKeeps(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	hbAt := clock.Advance(20 * time.Second)
	renewed, err := q.Heartbeat(t.Context(), l, lease)
	mustNoErr(t, err, "Heartbeat of a live lease")
	if renewed.Token == l.Token || renewed.Token == 0 {
		t.Errorf("Heartbeat returned token %d (claim's was %d); it must issue a new one", renewed.Token, l.Token)
	}
	sameTime(t, "heartbeated ExpiresAt (now + extend)", renewed.ExpiresAt, hbAt.Add(lease))
	if normKey(renewed.Key()) != normKey(l.Key()) || renewed.Worker != l.Worker {
		t.Errorf("Heartbeat returned a lease of %v held by %q, want %v held by %q", renewed.Key(), renewed.Worker, l.Key(), l.Worker)
	}
	clock.Advance(20 * time.Second) // past the claim's expiry, inside the heartbeat's
	reap(t, q, 0, "a heartbeated lease past its first expiry")
	wantEmpty(t, q, "", "while the heartbeated lease is live")
	wantLeaseLost(t, q.Complete(t.Context(), l), "Complete with the token a heartbeat replaced", l.Key())
	mustNoErr(t, q.Complete(t.Context(), renewed), "Complete with the heartbeat's token")
	wantEmpty(t, q, "", "after Complete")
}

func testSilenceLoses(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	in := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("p"), Metadata: map[string]string{"k": "v"}}
	enqueue(t, q, in)
	l := claimOne(t, q, "w")
	clock.Advance(lease - time.Millisecond)
	reap(t, q, 0, "1ms before expiry")
	clock.Advance(2 * time.Millisecond)
	reap(t, q, 1, "1ms after expiry")
	wantItemState(t, q, in.Key(), string(contract.StateQueued), "after Reap")
	if info, _, ok := itemState(t, q, in.Key()); ok {
		if info.Item.Attempts != 1 || !containsAny(info.Item.LastError, "expire") {
			t.Errorf("reaped item: Attempts=%d LastError=%q, want 1 and an error about expiry", info.Item.Attempts, info.Item.LastError)
		}
	}
	wantEmpty(t, q, "", "right after Reap (policy backoff 1s)")
	reap(t, q, 0, "a second Reap")
	clock.Advance(time.Second)
	again := claimOne(t, q, "w2")
	sameLeaseItem(t, "reclaimed after expiry", again, in)
	if again.Item.Attempts != 1 || !containsAny(again.Item.LastError, "expire") {
		t.Errorf("reclaimed item: Attempts=%d LastError=%q, want 1 and an error about expiry", again.Item.Attempts, again.Item.LastError)
	}
	if again.Token == l.Token {
		t.Errorf("reclaim issued token %d again", again.Token)
	}
}

func testReapToDead(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 1, Jitter: policy.Fixed(1)})
	in := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("p"), Metadata: map[string]string{"k": "v"}}
	enqueue(t, q, in)
	claimOne(t, q, "w")
	reapAt := clock.Advance(lease + time.Millisecond)
	reap(t, q, 1, "an expired lease on its last attempt")
	clock.Advance(time.Hour)
	wantEmpty(t, q, "", "after reaping the last attempt")
	dead := deadLetters(t, q, contract.DeadLetterFilter{})
	if len(dead) != 1 {
		t.Fatalf("dead letters after reaping the last attempt: %d, want 1", len(dead))
	}
	d := dead[0]
	if d.ID != "x" || d.State != contract.StateDead || d.Attempts != 1 || !containsAny(d.LastError, "expire") {
		t.Errorf("dead letter = %s state=%q attempts=%d last error=%q, want x, dead, 1, about expiry", d.ID, d.State, d.Attempts, d.LastError)
	}
	if d.DeadAt.Before(reapAt.Add(-lease-2*time.Millisecond)) || d.DeadAt.After(reapAt.Add(timeSlack)) {
		t.Errorf("DeadAt = %v, want between the expiry and the reap (%v)", d.DeadAt, reapAt)
	}
	sameMetadata(t, "reaped dead letter", d.Metadata, in.Metadata)
}

func testReapCounts(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, items("acme", "a", 5)...)
	ls, err := q.Claim(t.Context(), claimReq("w", 4))
	mustNoErr(t, err, "Claim(Max 4)")
	if len(ls) != 4 {
		t.Fatalf("Claim(Max 4) returned %d", len(ls))
	}
	clock.Advance(20 * time.Second)
	if _, err := q.Heartbeat(t.Context(), ls[0], lease); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	late := claimOne(t, q, "w") // expires 20s after the others
	clock.Advance(lease - 20*time.Second + time.Millisecond)
	reap(t, q, 3, "three expired leases, one heartbeated, one claimed later")
	reap(t, q, 0, "again")
	wantItemState(t, q, ls[0].Key(), string(contract.StateLeased), "heartbeated lease after Reap")
	wantItemState(t, q, late.Key(), string(contract.StateLeased), "later lease after Reap")
	for _, l := range ls[1:] {
		wantItemState(t, q, l.Key(), string(contract.StateQueued), "reaped lease")
	}
}

func testStaleAfterReclaim(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	stale := claimOne(t, q, "w1")
	clock.Advance(lease + time.Millisecond)
	reap(t, q, 1, "the first holder's expired lease")
	clock.Advance(time.Second)
	current := claimOne(t, q, "w2")
	if current.Token == stale.Token {
		t.Fatalf("the reclaim issued the stale token %d again", current.Token)
	}
	ctx := t.Context()
	wantLeaseLost(t, q.Complete(ctx, stale), "Complete with a reaped lease's token", stale.Key())
	_, err := q.Fail(ctx, stale, errors.New("stale failure"))
	wantLeaseLost(t, err, "Fail with a reaped lease's token", stale.Key())
	_, err = q.Heartbeat(ctx, stale, lease)
	wantLeaseLost(t, err, "Heartbeat with a reaped lease's token", stale.Key())

	// Nothing changed: the current holder's lease is intact and its item
	// still carries one attempt and the expiry, not the stale failure.
	if info, state, ok := itemState(t, q, current.Key()); ok {
		if state != string(contract.StateLeased) || info.Lease == nil || info.Lease.Token != current.Token || info.Item.Attempts != 1 ||
			containsAny(info.Item.LastError, "stale failure") {
			t.Errorf("after stale settles the item is %s, lease %+v, attempts %d, last error %q; want leased by the second holder, 1 attempt, expiry error",
				state, info.Lease, info.Item.Attempts, info.Item.LastError)
		}
	}
	wantEmpty(t, q, "", "after stale settles (the item is still leased)")
	renewed, err := q.Heartbeat(ctx, current, lease)
	mustNoErr(t, err, "Heartbeat by the current holder after stale settles")
	mustNoErr(t, q.Complete(ctx, renewed), "Complete by the current holder after stale settles")
	wantEmpty(t, q, "", "after the current holder completed")
	if dead := deadLetters(t, q, contract.DeadLetterFilter{}); len(dead) != 0 {
		t.Errorf("a stale Fail left dead letters: %+v", dead)
	}
}

func testStaleWhileRequeued(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	stale := claimOne(t, q, "w1")
	clock.Advance(lease + time.Millisecond)
	reap(t, q, 1, "the expired lease")
	ctx := t.Context()
	_, err := q.Heartbeat(ctx, stale, lease)
	wantLeaseLost(t, err, "Heartbeat of a reaped lease whose item is queued again", stale.Key())
	wantLeaseLost(t, q.Complete(ctx, stale), "Complete of a reaped lease whose item is queued again", stale.Key())
	_, err = q.Fail(ctx, stale, errors.New("stale failure"))
	wantLeaseLost(t, err, "Fail of a reaped lease whose item is queued again", stale.Key())
	wantItemState(t, q, stale.Key(), string(contract.StateQueued), "after stale settles of a queued item")
	clock.Advance(time.Second)
	l := claimOne(t, q, "w2")
	if l.Item.Attempts != 1 || containsAny(l.Item.LastError, "stale failure") {
		t.Errorf("after stale settles the item has Attempts=%d LastError=%q, want 1 and the expiry", l.Item.Attempts, l.Item.LastError)
	}
}

func testReaperLosesToHeartbeat(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	clock.Advance(lease - time.Millisecond)
	renewed, err := q.Heartbeat(t.Context(), l, lease)
	mustNoErr(t, err, "Heartbeat 1ms before expiry")
	clock.Advance(time.Second) // past the claim's expiry
	reap(t, q, 0, "a lease heartbeated just before it expired")
	if info, state, ok := itemState(t, q, l.Key()); ok {
		if state != string(contract.StateLeased) || info.Item.Attempts != 0 || info.Item.LastError != "" {
			t.Errorf("after a Reap that lost to a heartbeat the item is %s with %d attempts and error %q; the reaper must write nothing",
				state, info.Item.Attempts, info.Item.LastError)
		}
	}
	mustNoErr(t, q.Complete(t.Context(), renewed), "Complete with the heartbeat's token after the reaper passed")
	wantEmpty(t, q, "", "after Complete")
	if dead := deadLetters(t, q, contract.DeadLetterFilter{}); len(dead) != 0 {
		t.Errorf("dead letters after the reaper lost: %+v", dead)
	}
}

func testCompletedOrForged(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"), item("acme", "y"))
	x := claimOne(t, q, "w")
	forged := x
	forged.Token += 1000
	wantLeaseLost(t, q.Complete(t.Context(), forged), "Complete with a forged token", x.Key())
	_, err := q.Heartbeat(t.Context(), forged, lease)
	wantLeaseLost(t, err, "Heartbeat with a forged token", x.Key())
	_, err = q.Fail(t.Context(), forged, errors.New("forged"))
	wantLeaseLost(t, err, "Fail with a forged token", x.Key())
	mustNoErr(t, q.Complete(t.Context(), x), "Complete with the real token")
	wantLeaseLost(t, q.Complete(t.Context(), x), "a second Complete of the same lease", x.Key())
	_, err = q.Fail(t.Context(), x, errors.New("late"))
	wantLeaseLost(t, err, "Fail of a completed lease", x.Key())
	ghost := contract.Lease{Item: contract.Item{Tenant: "acme", ID: "never-enqueued"}, Worker: "w", Token: x.Token}
	wantLeaseLost(t, q.Complete(t.Context(), ghost), "Complete of an item never enqueued", ghost.Key())
	if dead := deadLetters(t, q, contract.DeadLetterFilter{}); len(dead) != 0 {
		t.Errorf("settles with lost leases left dead letters: %+v", dead)
	}
	y := claimOne(t, q, "w")
	if y.Item.ID != "y" {
		t.Errorf("claimed %s, want y", y.Item.ID)
	}
	wantEmpty(t, q, "", "after claiming y")
}

func testTokensNeverReused(t *testing.T, f QueueFactory) {
	// Fixed(0) jitter: a failed item is due again in the same instant, so
	// a token derived from the time or the attempt count would repeat.
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 1000, Jitter: policy.Fixed(0)})
	seen := map[int64]string{}
	note := func(l contract.Lease, how string) {
		t.Helper()
		if prev, ok := seen[l.Token]; ok {
			t.Errorf("token %d issued twice for one item: %s, then %s", l.Token, prev, how)
		}
		seen[l.Token] = how
	}
	enqueue(t, q, item("acme", "x"))
	for i := range 30 {
		l := claimOne(t, q, "w")
		note(l, fmt.Sprintf("claim %d", i))
		if i%3 == 0 {
			hb, err := q.Heartbeat(t.Context(), l, lease)
			mustNoErr(t, err, "Heartbeat")
			note(hb, fmt.Sprintf("heartbeat %d", i))
			l = hb
		}
		d, err := q.Fail(t.Context(), l, errors.New("again"))
		mustNoErr(t, err, "Fail %d", i)
		if !d.Retry {
			t.Fatalf("Fail %d: decision %+v, want a retry", i, d)
		}
	}
	// Completing removes the item; the same ID enqueued again is a new
	// item, but its tokens still must not repeat the old ones.
	for i := range 10 {
		l := claimOne(t, q, "w")
		note(l, fmt.Sprintf("claim after re-enqueue %d", i))
		mustNoErr(t, q.Complete(t.Context(), l), "Complete")
		enqueue(t, q, item("acme", "x"))
	}
	// Expiry and reap in the same instant as the reclaim.
	for i := range 5 {
		l := claimOne(t, q, "w")
		note(l, fmt.Sprintf("claim before reap %d", i))
		clock.Advance(lease + time.Millisecond)
		reap(t, q, 1, "expired lease")
	}
}

// testTokensIncrease pins the rule fenced run writes rely on: every token
// issued for an item is greater than every one issued for it before, by a
// claim or a heartbeat, across expiry and reclaim, fail and reclaim (in the
// same instant) and complete and re-enqueue.
func testTokensIncrease(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 1000, Jitter: policy.Fixed(0)})
	var last int64
	var lastHow string
	next := func(l contract.Lease, how string) contract.Lease {
		t.Helper()
		if l.Token <= last {
			t.Errorf("token %d issued by %s is not greater than %d, issued before it for the item by %s", l.Token, how, last, lastHow)
		}
		last, lastHow = l.Token, how
		return l
	}
	heartbeats := func(l contract.Lease, n int, how string) contract.Lease {
		t.Helper()
		for i := range n {
			clock.Advance(time.Second)
			hb, err := q.Heartbeat(t.Context(), l, lease)
			mustNoErr(t, err, "Heartbeat %d after %s", i, how)
			l = next(hb, fmt.Sprintf("heartbeat %d after %s", i, how))
		}
		return l
	}
	enqueue(t, q, item("acme", "x"))
	other := contract.Item{Tenant: "acme", ID: "y", Queue: "other", Payload: []byte("p")}
	for round := range 4 {
		l := next(claimOne(t, q, "w"), fmt.Sprintf("claim %d", round))
		l = heartbeats(l, 3, fmt.Sprintf("claim %d", round))
		// Tokens issued for other items meanwhile must not matter.
		enqueue(t, q, other)
		ol, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: "other", Worker: "o", LeaseFor: lease, Max: 1})
		mustNoErr(t, err, "Claim of another queue")
		mustNoErr(t, q.Complete(t.Context(), ol...), "Complete in another queue")
		switch round % 2 {
		case 0: // expiry, reap, reclaim
			clock.Advance(lease + time.Millisecond)
			reap(t, q, 1, fmt.Sprintf("round %d", round))
		case 1: // fail, reclaim in the same instant
			d, err := q.Fail(t.Context(), l, errors.New("again"))
			mustNoErr(t, err, "Fail in round %d", round)
			if !d.Retry {
				t.Fatalf("Fail in round %d: decision %+v, want a retry", round, d)
			}
		}
	}
	l := next(claimOne(t, q, "w"), "the claim after the rounds")
	mustNoErr(t, q.Complete(t.Context(), l), "Complete")
	enqueue(t, q, item("acme", "x"))
	l = next(claimOne(t, q, "w"), "the claim after complete and re-enqueue")
	heartbeats(l, 2, "the claim after complete and re-enqueue")
}

func testReaperRacesHeartbeat(t *testing.T, f QueueFactory) {
	// At the instant of expiry a heartbeat and a reap race. A backing may
	// let either win (or refuse heartbeats of expired leases outright),
	// but never both: a heartbeat that returned a new lease must find the
	// item still its own, and a reap that counted the lease must have left
	// the heartbeat nothing.
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 100, Jitter: policy.Fixed(0)})
	for round := range 20 {
		id := fmt.Sprintf("x%02d", round)
		enqueue(t, q, item("acme", id))
		l := claimOne(t, q, "w")
		clock.Advance(lease + time.Millisecond)
		var (
			wg      sync.WaitGroup
			renewed contract.Lease
			hbErr   error
			reaped  int
			reapErr error
		)
		wg.Add(2)
		go func() { defer wg.Done(); renewed, hbErr = q.Heartbeat(t.Context(), l, lease) }()
		go func() { defer wg.Done(); reaped, reapErr = q.Reap(t.Context(), contract.DefaultQueue) }()
		wg.Wait()
		mustNoErr(t, reapErr, "Reap racing a heartbeat")
		var ll *contract.LeaseLostError
		if hbErr != nil && !errors.As(hbErr, &ll) {
			t.Fatalf("round %d: Heartbeat racing a reap failed with %v, want success or *LeaseLostError", round, hbErr)
		}
		switch {
		case hbErr == nil && reaped == 1:
			t.Fatalf("round %d: both the heartbeat and the reap won the same lease", round)
		case hbErr != nil && reaped == 0:
			t.Fatalf("round %d: neither the heartbeat nor the reap took the expired lease", round)
		case hbErr == nil:
			mustNoErr(t, q.Complete(t.Context(), renewed), "round %d: Complete after the heartbeat won", round)
			wantEmpty(t, q, "", "after the heartbeat won and completed")
		default:
			again := claimOne(t, q, "w")
			if again.Item.ID != id || again.Item.Attempts != 1 {
				t.Fatalf("round %d: after the reap won, claimed %s with %d attempts, want %s with 1", round, again.Item.ID, again.Item.Attempts, id)
			}
			mustNoErr(t, q.Complete(t.Context(), again), "round %d: Complete after the reap won", round)
		}
	}
}
