//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/internal/redistest"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t)
	ns := redistest.Namespace(t, c)
	clock := contracttest.NewFakeClock(time.Time{})
	st, err := redisstore.NewState(c, clock, redisstore.Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.PutRun(ctx, contract.Run{Tenant: "a:b", ID: "x", Session: "s", Data: []byte(`{"k":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	r, err = st.PatchRun(ctx, "a:b", "x", contract.Patch{Counters: contract.Counters{InputTokens: 5}, Status: "go"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	_, err = st.PutRun(ctx, contract.Run{Tenant: "a:b", ID: "x", Version: 1})
	var ce *contract.StateConflictError
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	p, err := st.ListSessionRuns(ctx, "a:b", "s", contract.PageRequest{})
	if err != nil || len(p.Runs) != 1 {
		t.Fatal(err, p)
	}

	q, err := redisstore.NewQueue(c, clock, redisstore.Settings{Namespace: ns, Policy: policy.Policy{MaxAttempts: 2, Jitter: policy.Fixed(1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	err = q.Enqueue(ctx, contract.Item{Tenant: "A", ID: "1", Payload: []byte("p"), Metadata: map[string]string{"k": "v"}},
		contract.Item{Tenant: "A", ID: "2"}, contract.Item{Tenant: "B", ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		t.Logf("%+v", l)
	}
	if err := q.Complete(ctx, ls[0]); err != nil {
		t.Fatal(err)
	}
	d, err := q.Fail(ctx, ls[1], errors.New("boom"))
	t.Log(d, err)
	l2, err := q.Heartbeat(ctx, ls[2], time.Minute)
	t.Log(l2, err)
	clock.Advance(2 * time.Minute)
	n, err := q.Reap(ctx, "")
	t.Log("reaped", n, err)
	ls, err = q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	t.Log(ls, err)
	for _, l := range ls {
		d, err := q.Fail(ctx, l, errors.New("boom2"))
		t.Log(d, err)
	}
	dl, err := q.DeadLetters(ctx, contract.DeadLetterQuery{})
	t.Log(dl, err)
	rot, err := q.Rotation(ctx, "", 10)
	t.Log(rot, err)
	ts, err := q.Tenants(ctx, "")
	t.Log(ts, err)
	qs, err := q.Queues(ctx)
	t.Log(qs, err)
	h, err := q.Health(ctx)
	t.Log(h, err)
	n, err = q.Requeue(ctx, contract.DeadLetterFilter{Tenant: "A"})
	t.Log("requeued", n, err)
	n, err = q.Purge(ctx, contract.DeadLetterFilter{})
	t.Log("purged", n, err)
}
