//go:build integration

package pgstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/pgstore"
)

func backendAlive(t *testing.T, d *testDB, pid uint32) bool {
	t.Helper()
	var n int
	if err := d.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// The receive loop is running before anything else uses the connection:
// a notification sent the moment Start returns is delivered, and a
// channel LISTENed after the start (which interrupts the wait) works too.
func TestListenerLoopRunsBeforeFirstQuery(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l, err := pgstore.NewListener(d.connConfig(t), pgstore.ListenerSettings{})
	if err != nil {
		t.Fatal(err)
	}
	early, stopEarly := l.Subscribe("adk_early")
	defer stopEarly()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := pgstore.Notify(ctx, d.pool, "adk_early", "one"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-early:
		if n.Payload != "one" || n.Synthetic {
			t.Fatalf("got %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a notification sent right after Start was not delivered")
	}
	// Channels added while the loop waits: each Listen interrupts the wait,
	// LISTENs, and returns once the server has it.
	for i := range 5 {
		ch := fmt.Sprintf("adk_late_%d", i)
		sub, stop := l.Subscribe(ch)
		if err := l.Listen(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if err := pgstore.Notify(ctx, d.pool, ch, "late"); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-sub:
			if n.Channel != ch || n.Payload != "late" {
				t.Fatalf("got %+v on %s", n, ch)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification on %s, LISTENed after the start", ch)
		}
		stop()
	}
}

// The connection lives exactly as long as its loop: it stays open with
// nothing but the loop referring to it (through garbage collections), and
// Close ends both.
func TestListenerConnLivesWithLoop(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l := d.listener(t, pgstore.ListenerSettings{})
	pid := l.Stats().BackendPID
	sub, stop := l.Subscribe(d.schema)
	defer stop()
	for range 3 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	if !backendAlive(t, d, pid) {
		t.Fatal("the listener's backend went away while its loop runs")
	}
	if err := pgstore.Notify(ctx, d.pool, d.schema, "still-here"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub:
	case <-time.After(5 * time.Second):
		t.Fatal("the listener stopped delivering after garbage collections")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for backendAlive(t, d, pid) {
		if time.Now().After(deadline) {
			t.Fatal("the listener's backend outlived Close")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := l.Stats(); st.Connected || st.BackendPID != 0 {
		t.Errorf("stats after Close: %+v", st)
	}
}

// A slow subscriber loses wakes; it never holds up the loop or the other
// subscribers.
func TestListenerSlowSubscriberDrops(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l := d.listener(t, pgstore.ListenerSettings{Buffer: 2})
	const ch = "adk_fanout"
	slow, stopSlow := l.Subscribe(ch) // never read
	defer stopSlow()
	fast, stopFast := l.Subscribe(ch)
	defer stopFast()
	if err := l.Listen(ctx, ch); err != nil {
		t.Fatal(err)
	}
	// One at a time: the reading subscriber gets each before the next is
	// sent, while the other's buffer fills and then overflows.
	const sent = 20
	for i := range sent {
		if err := pgstore.Notify(ctx, d.pool, ch, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-fast:
			if n.Payload != fmt.Sprint(i) {
				t.Fatalf("reading subscriber got %q, want %d", n.Payload, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("notification %d did not reach the reading subscriber while another did not read", i)
		}
	}
	// A notification is handed to the subscribers in no set order, so the
	// last one may reach the reading subscriber before the other's drop is
	// counted. One more, once read, means the dispatch of every earlier
	// one has finished (they are dispatched one at a time); its own drop
	// may or may not be counted yet.
	if err := pgstore.Notify(ctx, d.pool, ch, "sync"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fast:
	case <-time.After(5 * time.Second):
		t.Fatal("the last notification did not reach the reading subscriber")
	}
	if len(slow) != 2 {
		t.Errorf("the slow subscriber holds %d, want its buffer of 2", len(slow))
	}
	if d := l.Stats().Dropped; d != sent-2 && d != sent-1 {
		t.Errorf("Stats().Dropped = %d, want %d (or %d with the last one's)", d, sent-2, sent-1)
	}
}

// Start fails cleanly when the server cannot be reached, leaving nothing
// running, and the error does not show the password.
func TestListenerStartFails(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://adk:s3cret-pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.NewListener(cfg, pgstore.ListenerSettings{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Start(ctxT(t, 10*time.Second))
	if err == nil {
		t.Fatal("Start against a closed port succeeded")
	}
	if s := err.Error(); strings.Contains(s, "s3cret-pw") {
		t.Errorf("error shows the password: %s", s)
	}
	_ = l.Close()
}
