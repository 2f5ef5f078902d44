//go:build integration

package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestStateReplayRecords sends one patch twice with its nonce, as the
// retry after a lost reply does, with other writes in between, and checks
// how long the record lasts and what it costs: the patch counts once
// within the window, the records of the tenant are trimmed a few per call
// once they are older than the window (never by TTL), and a resend after
// the window is a new patch.
func TestStateReplayRecords(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	st, _ := NewState(client, clock, Settings{Namespace: redistest.Namespace(t, client)})
	k := newStateKeys(st.d.settings.Namespace, "acme")
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}); err != nil {
		t.Fatal(err)
	}
	patch := func(nonce string, iterations, cursor int64) {
		t.Helper()
		if _, err := st.d.run(ctx, scriptStatePatch, writeKeys(k, "r", k.versions("r"), k.vdata("r")),
			st.d.writeArgs(nonce, clock.Now(), "r", 0, 0, 0, iterations, cursor, "", clock.Now().UnixNano(), 0, 0, "")...); err != nil {
			t.Fatal(err)
		}
	}
	records := func() (int64, int64) {
		t.Helper()
		n, err := client.ZCard(ctx, k.replays()).Result()
		m, err2 := client.HLen(ctx, k.outcomes()).Result()
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		for _, key := range []string{k.replays(), k.outcomes()} {
			if ttl, err := client.TTL(ctx, key).Result(); err != nil || ttl != -1 {
				t.Fatalf("%s has TTL %v (%v); no key of the state may expire", key, ttl, err)
			}
		}
		return n, m
	}

	patch("mine-0000000001", 1, 0)
	for i := range 40 {
		patch(fmt.Sprintf("other-%010d", i), 0, 1)
	}
	clock.Advance(st.d.window / 2)
	patch("mine-0000000001", 1, 0) // the resend, within the window
	if r, _ := st.GetRun(ctx, "acme", "r"); r.Counters.Iterations != 1 || r.Counters.Cursor != 40 || r.Version != 42 {
		t.Fatalf("after a patch, 40 others and its resend: %+v at version %d; want it counted once", r.Counters, r.Version)
	}
	if n, m := records(); n != 42 || m != 42 {
		t.Fatalf("records of the put and 41 patches: %d scores, %d outcomes; want 42", n, m)
	}

	// Past the window each write forgets at most 8 expired records.
	clock.Advance(st.d.window)
	patch("later-000000001", 0, 1)
	if n, m := records(); n != 35 || m != 35 {
		t.Fatalf("after one write past the window: %d scores, %d outcomes; want 42-8+1 = 35", n, m)
	}
	for i := range 5 {
		patch(fmt.Sprintf("later-%09d", i+2), 0, 1)
	}
	if n, m := records(); n != 6 || m != 6 {
		t.Fatalf("after six writes past the window: %d scores, %d outcomes; want only their own 6", n, m)
	}
	// Forgotten: a resend this late is a new patch.
	patch("mine-0000000001", 1, 0)
	if r, _ := st.GetRun(ctx, "acme", "r"); r.Counters.Iterations != 2 {
		t.Fatalf("a resend after the window: iterations %d, want 2 (the record was forgotten)", r.Counters.Iterations)
	}
}

// TestStateWritesDeclareTheirKeys checks the scripts' replies that ask for
// another call: a put or delete of a run in a session other than the one
// whose index the call declared writes nothing and names the session, so
// that every key a script touches is declared (Redis Cluster routes and
// checks declared keys only).
func TestStateWritesDeclareTheirKeys(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	clock := contracttest.NewFakeClock(time.Time{})
	st, _ := NewState(client, clock, Settings{Namespace: redistest.Namespace(t, client)})
	k := newStateKeys(st.d.settings.Namespace, "acme")
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Session: "s1", Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	// A put moving the run to s2 that declared s2 as the stored session.
	res, err := st.d.run(ctx, scriptStatePut, writeKeys(k, "r", k.index(), k.seq(), k.session("s2"), k.session("s2"), k.versions("r"), k.vdata("r")),
		st.d.writeArgs("put-guess-00001", clock.Now(), "r", 1, "s2", "s2", "", []byte(`2`), clock.Now().UnixNano(), 0, 0, "")...)
	if status, vals, err2 := writeReply(res); err != nil || err2 != nil || status != replySession || replyString(vals) != "s1" {
		t.Fatalf("put with the wrong session declared: %v %v; want a request for s1's index", res, err)
	}
	res, err = st.d.run(ctx, scriptStateDelete, writeKeys(k, "r", k.index(), k.patches("r"), k.session(""), k.versions("r"), k.vdata("r")),
		st.d.writeArgs("del-guess-00001", clock.Now(), "r", "", 0)...)
	if status, vals, err2 := writeReply(res); err != nil || err2 != nil || status != replySession || replyString(vals) != "s1" {
		t.Fatalf("delete with no session declared: %v %v; want a request for s1's index", res, err)
	}
	r, err := st.GetRun(ctx, "acme", "r")
	if err != nil || r.Version != 1 || r.Session != "s1" || string(r.Data) != "1" {
		t.Fatalf("after the refused calls: %+v, %v; want the run untouched", r, err)
	}
	// Through the API both land, with a second call each.
	if r, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Version: 1, Session: "s2", Data: []byte(`2`)}); err != nil || r.Session != "s2" {
		t.Fatalf("put moving the run to s2: %+v, %v", r, err)
	}
	for s, want := range map[string]int64{"s1": 0, "s2": 1} {
		if n, err := client.ZCard(ctx, k.session(s)).Result(); err != nil || n != want {
			t.Errorf("session %s index holds %d runs (%v), want %d", s, n, err, want)
		}
	}
	if err := st.DeleteRun(ctx, "acme", "r"); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Exists(ctx, k.session("s2"), k.run("r"), k.meta("r")).Result(); err != nil || n != 0 {
		t.Errorf("after the delete %d of the run's keys remain (%v)", n, err)
	}
}
