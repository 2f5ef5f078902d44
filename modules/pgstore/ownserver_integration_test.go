//go:build integration

package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// A server restart: the listener backs off while the server is down,
// reconnects when it is back, LISTENs again and sends a synthetic wake;
// the queue reports the outage as a retryable error and works after it.
func TestServerRestart(t *testing.T) {
	// A server of the test's own, which it may stop and start (the shared
	// server is never touched).
	s := pgstoretest.StartServer(t, "fsync=off")
	dsn := s.DSN("statement_timeout=30s")
	ctx := ctxT(t, 2*time.Minute)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	lcfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.NewListener(lcfg, pgstore.ListenerSettings{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	q, err := pgstore.OpenQueue(ctx, pool, nil, pgstore.Settings{Listener: l})
	if err != nil {
		t.Fatal(err)
	}
	// LISTEN first: a subscriber that comes before its channel is LISTENed
	// gets a wake of its own once it is, and this test counts wakes.
	if err := l.Listen(ctx, pgstore.NotifyChannel(pgstore.StateTables{})); err != nil {
		t.Fatal(err)
	}
	wake, stop := q.Subscribe("")
	defer stop()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "before"}); err != nil {
		t.Fatal(err)
	}
	<-wake

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Connected {
		if time.Now().After(deadline) {
			t.Fatal("the listener still reports a connection to a stopped server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	var unavailable *contract.QueueUnavailableError
	if !errors.As(err, &unavailable) || !contract.Retryable(err) {
		t.Errorf("Claim while the server is down: %v, want a retryable *QueueUnavailableError", err)
	}
	time.Sleep(time.Second) // several failed attempts, backing off
	select {
	case <-wake:
		t.Fatal("a wake while the server was down")
	default:
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}

	select {
	case <-wake:
	case <-time.After(15 * time.Second):
		t.Fatalf("no synthetic wake after the server came back; listener %+v", l.Stats())
	}
	if st := l.Stats(); st.Reconnects != 1 || !st.Connected {
		t.Errorf("listener after the restart: %+v, want one reconnect", st)
	}
	// Claim again until the pool has replaced its dead connections; the
	// item enqueued before the restart is still there (it was committed).
	var ls []contract.Lease
	for i := 0; ; i++ {
		ls, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
		if err == nil || !contract.Retryable(err) || i == 10 {
			break
		}
	}
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "before" {
		t.Fatalf("claim after the restart: %v, %v", ls, err)
	}
	// The channel is LISTENed again.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "after"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake for an enqueue after the restart")
	}
}

// Lease tokens of one item keep increasing across a restart of the
// server, clean (fast) or a crash (immediate): a claim and a heartbeat
// before it, the lease left to expire (by the queue's clock), and the
// item claimed again after it gets a larger token than every one before.
// Tokens come from a sequence, which the server never hands out twice,
// whatever stopped it; this is what fencing the item's run relies on.
func TestTokensIncreaseAcrossRestart(t *testing.T) {
	s := pgstoretest.StartServer(t, "fsync=off")
	ctx := ctxT(t, 3*time.Minute)
	cfg, err := pgxpool.ParseConfig(s.DSN("statement_timeout=30s"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
	q, err := pgstore.OpenQueue(ctx, pool, clock, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	// again retries a call while the pool replaces the connections the
	// restart cut (each failed call discards one).
	again := func(what string, call func() error) {
		t.Helper()
		var err error
		for range 20 {
			if err = call(); err == nil || !contract.Retryable(err) {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	claim := func() contract.Lease {
		t.Helper()
		var ls []contract.Lease
		again("claim", func() (err error) {
			ls, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1, Worker: "w"})
			return err
		})
		if len(ls) != 1 {
			t.Fatalf("claimed %d items, want the one", len(ls))
		}
		return ls[0]
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "job"}); err != nil {
		t.Fatal(err)
	}
	lease := claim()
	for _, stop := range []struct {
		mode string
		fn   func() error
	}{{"fast", s.Stop}, {"immediate", s.StopImmediate}} {
		hb, err := q.Heartbeat(ctx, lease, time.Minute)
		if err != nil {
			t.Fatalf("heartbeat before the %s stop: %v", stop.mode, err)
		}
		if hb.Token <= lease.Token {
			t.Fatalf("heartbeat token %d after claim token %d", hb.Token, lease.Token)
		}
		if err := stop.fn(); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Minute) // the lease has expired
		again("reap", func() error {
			n, err := q.Reap(ctx, contract.DefaultQueue)
			if err == nil && n != 1 {
				t.Fatalf("reaped %d after the %s restart, want the expired lease", n, stop.mode)
			}
			return err
		})
		clock.Advance(time.Hour) // past the retry delay the policy gave it
		next := claim()
		if next.Token <= hb.Token {
			t.Fatalf("after a %s stop the item was claimed under token %d, not above the token %d issued before it", stop.mode, next.Token, hb.Token)
		}
		t.Logf("%s: claim %d, heartbeat %d, claim after the restart %d", stop.mode, lease.Token, hb.Token, next.Token)
		lease = next
	}
}
