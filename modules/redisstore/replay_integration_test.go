//go:build integration

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestRetriedScriptsApplyOnce sends the same call twice, as a retry after a
// lost reply does, and checks that the second lands as a replay: the
// heartbeat's token handed back, the fail not reported as lost. (The state
// writes' replays are pinned by contracttest.StateReplay and
// TestStateReplayRecords.)
func TestRetriedScriptsApplyOnce(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	q, _ := NewQueue(client, clock, Settings{Namespace: ns})
	defer q.Close()

	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	keys := q.d.queueKeys("default")
	hb := func() (any, error) {
		exp := clock.Now().Add(time.Minute)
		return q.d.run(ctx, scriptHeartbeat, keys, itemRef("acme", "i"), ls[0].Token,
			nowMicros(clock.Now()), nowMicros(exp), nanos(exp), "hb-nonce")
	}
	first, err1 := hb()
	second, err2 := hb()
	if err1 != nil || err2 != nil || first != second || first.(int64) <= ls[0].Token {
		t.Errorf("heartbeat and its replay: %v %v / %v %v; want the same new token", first, err1, second, err2)
	}
	l := ls[0]
	l.Token = first.(int64)
	entry := settleEntry{ref: itemRef("acme", "i"), token: l.Token, maxScore: "+inf", decision: q.d.policy.Decide(1, errors.New("x"), clock.Now()), cause: errors.New("x"), nonce: "fail-nonce"}
	for i := range 2 {
		res, err := q.d.run(ctx, scriptSettle, keys, q.d.settleArgs("default", clock.Now(), entry)...)
		if r, _ := res.([]any); err != nil || len(r) != 1 || r[0] != int64(1) {
			t.Errorf("fail try %d: %v, %v; want applied", i+1, res, err)
		}
	}
	info, err := q.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "i"})
	if err != nil || info.Item.Attempts != 1 {
		t.Errorf("after a fail and its replay: %+v, %v; want one attempt", info.Item, err)
	}
}

// TestRetriedClaimReturnsTheSameLeases: a claim sent twice with one nonce
// (a retry after a lost reply) hands back the first try's leases, in the
// same order, and leases nothing more.
func TestRetriedClaimReturnsTheSameLeases(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, _ := NewQueue(client, clock, Settings{Namespace: redistest.Namespace(t, client)})
	defer q.Close()
	for _, tenant := range []string{"a", "b", "c"} {
		for _, id := range []string{"1", "2"} {
			if err := q.Enqueue(ctx, contract.Item{Tenant: tenant, ID: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys := q.d.queueKeys("default")
	now, exp := clock.Now(), clock.Now().Add(time.Minute)
	claim := func(id string) []any {
		res, err := q.d.run(ctx, scriptClaim, keys, nowMicros(now), nextMicrosHex(now), nanos(now), nowMicros(exp), nanos(exp), "w", 4, 1000, id)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := res.([]any)
		return rows
	}
	// The reply is the batch's token, then one record per lease.
	first, again := claim("claim-nonce-0001"), claim("claim-nonce-0001")
	if len(first) != 5 || fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatalf("claim %v, its replay %v; want the same token and four records", first, again)
	}
	if rest := claim("claim-nonce-0002"); len(rest) != 3 || rest[0] == first[0] {
		t.Fatalf("a new claim got %v; want a new token and the 2 records the first left", rest)
	}
}

// TestReaperLosesToHeartbeat interleaves the two steps of a reap with a
// heartbeat: the reaper saw the lease expired, the holder extended it
// before the reaper wrote, and the reaper's fenced write changes nothing.
func TestReaperLosesToHeartbeat(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	q, _ := NewQueue(client, clock, Settings{Namespace: redistest.Namespace(t, client)})
	defer q.Close()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	keys := q.d.queueKeys("default")
	clock.Advance(time.Minute) // expires at exactly now: the reaper may take it

	res, err := q.d.run(ctx, scriptReapScan, keys, nowMicros(clock.Now()), 10)
	flat, _ := res.([]any)
	if err != nil || len(flat) != 4 {
		t.Fatalf("scan: %v, %v", res, err)
	}
	seenToken, _ := flat[1].(string)
	seenScore, _ := flat[3].(string)

	// The holder's heartbeat lands between the scan and the write. Its
	// clock reads a second earlier, while the lease was still live, as a
	// holder whose clock trails the reaper's would.
	clock.Advance(-time.Second)
	hb, err := q.Heartbeat(ctx, ls[0], time.Minute)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	clock.Advance(time.Second)

	entry := settleEntry{ref: itemRef("acme", "i"), token: atoi64(seenToken), maxScore: seenScore,
		decision: q.d.policy.Decide(1, contract.ErrLeaseExpired, clock.Now()), cause: contract.ErrLeaseExpired}
	res, err = q.d.run(ctx, scriptSettle, keys, q.d.settleArgs("default", clock.Now(), entry)...)
	if r, _ := res.([]any); err != nil || len(r) != 1 || r[0] != int64(0) {
		t.Fatalf("the late reaper's write: %v, %v; want nothing applied", res, err)
	}
	info, err := q.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "i"})
	if err != nil || info.Lease == nil || info.Lease.Token != hb.Token || info.Item.Attempts != 0 {
		t.Fatalf("after the lost race: %+v, %v; want the heartbeat's lease untouched", info, err)
	}
	if err := q.Complete(ctx, hb); err != nil {
		t.Fatalf("the holder completes: %v", err)
	}
}

// TestTokensSurviveCounterRollback: a server that comes back with less
// than it acknowledged (an everysec AOF after a host crash) rolls the
// token counter back with everything else. Tokens have the server clock
// as their floor, so the claims and heartbeats after it still get tokens
// above every token issued before.
func TestTokensSurviveCounterRollback(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	q, _ := NewQueue(client, nil, Settings{Namespace: redistest.Namespace(t, client)})
	defer q.Close()
	for _, id := range []string{"a", "b"} {
		if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := q.Heartbeat(ctx, first[0], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if hb.Token <= first[0].Token {
		t.Fatalf("heartbeat token %d not above the claim's %d", hb.Token, first[0].Token)
	}
	// The lost second: the counter goes back as if these had never been issued.
	rollback := func() {
		t.Helper()
		if err := client.Set(ctx, q.d.keys.ns+"token", first[0].Token-1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rollback()
	second, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if second[0].Token <= hb.Token {
		t.Fatalf("after the rollback a claim got token %d; want above %d, the last issued before it", second[0].Token, hb.Token)
	}
	rollback()
	hb2, err := q.Heartbeat(ctx, second[0], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if hb2.Token <= second[0].Token {
		t.Fatalf("after a second rollback a heartbeat got token %d; want above %d", hb2.Token, second[0].Token)
	}
	// The stale token of the first lease still fences.
	if err := q.Complete(ctx, first[0]); err == nil {
		t.Fatal("Complete with the claim's token, replaced by its heartbeat, succeeded")
	}
	if err := q.Complete(ctx, hb, hb2); err != nil {
		t.Fatalf("Complete of the live leases: %v", err)
	}
}
