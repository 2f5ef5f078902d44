//go:build integration

package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
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
