//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
)

// TestTokensIncreaseAcrossRestart: the fencing tokens of one item keep
// increasing across a kill and restart of a server with AOF (fsync
// always): a claim, a heartbeat, the restart, and the claim after the
// lease ran out carries a greater token than both, so the fence the
// new holder writes the run under refuses the old holder's writes, and
// the run keeps its fence across the restart too.
func TestTokensIncreaseAcrossRestart(t *testing.T) {
	ctx := context.Background()
	srv, client := failoverServer(t)
	clock := contracttest.NewFakeClock(time.Time{})
	budget := redisstore.RetryBudget{Attempts: 40, BaseDelay: 10 * time.Millisecond, MaxDelay: 100 * time.Millisecond}
	settings := redisstore.Settings{RetryBudget: budget, Policy: policy.Policy{Jitter: policy.Fixed(0)}}
	q, err := redisstore.NewQueue(client, clock, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	st, err := redisstore.NewState(client, clock, settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i"}); err != nil {
		t.Fatal(err)
	}
	claim := func(what string) contract.Lease {
		t.Helper()
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: 30 * time.Second, Max: 1})
		if err != nil || len(ls) != 1 {
			t.Fatalf("%s: %v, %v", what, ls, err)
		}
		return ls[0]
	}
	first := claim("first claim")
	beat, err := q.Heartbeat(ctx, first, 30*time.Second)
	if err != nil || beat.Token <= first.Token {
		t.Fatalf("heartbeat: token %d after %d (%v); want it greater", beat.Token, first.Token, err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "i", Data: []byte(`{"by":"first"}`), Fence: beat.Token}); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	srv.Start()
	// The counter came back from the append-only file, not only from the
	// clock floor: the namespace's last token is the heartbeat's.
	last, err := client.Get(ctx, "{adk:queue}:token").Int64()
	if err != nil || last < beat.Token {
		t.Fatalf("after the restart the namespace's last token is %d (%v), want at least %d", last, err, beat.Token)
	}
	r, err := st.GetRun(ctx, "acme", "i")
	if err != nil || r.Fence != beat.Token {
		t.Fatalf("after the restart the run is %+v, %v; want its fence %d", r, err, beat.Token)
	}

	clock.Advance(31 * time.Second)
	if n, err := q.Reap(ctx, ""); err != nil || n != 1 {
		t.Fatalf("reap after the lease ran out: %d, %v", n, err)
	}
	second := claim("claim after the restart")
	if second.Token <= beat.Token {
		t.Fatalf("the claim after the restart has token %d, the heartbeat before it had %d: tokens of an item must increase", second.Token, beat.Token)
	}
	if _, err := st.PatchRun(ctx, "acme", "i", contract.Patch{Status: "second", Fence: second.Token}); err != nil {
		t.Fatal(err)
	}
	var se *contract.StaleFenceError
	if _, err := st.PatchRun(ctx, "acme", "i", contract.Patch{Status: "first again", Fence: beat.Token}); !errors.As(err, &se) || se.Stored != second.Token {
		t.Fatalf("the first holder's write after the reclaim: %v, want a *StaleFenceError below %d", err, second.Token)
	}
	if _, err := q.Heartbeat(ctx, beat, 30*time.Second); !errors.As(err, new(*contract.LeaseLostError)) {
		t.Fatalf("the first holder's heartbeat after the reclaim: %v, want its lease lost", err)
	}
	if err := q.Complete(ctx, second); err != nil {
		t.Fatal(err)
	}
	t.Logf("tokens: claim %d, heartbeat %d, after the restart %d (namespace counter %s)", first.Token, beat.Token, second.Token, strconv.FormatInt(last, 10))
}
