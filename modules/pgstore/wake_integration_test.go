//go:build integration

package pgstore_test

import (
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// A queue whose channel the listener does not LISTEN yet (each queue of
// its own tables has one): Subscribe has the listener LISTEN it in the
// background, and what is notified before that is in place is lost, so
// the subscriber gets one wake as soon as it is, with no enqueue at all;
// an enqueue after that wakes it as usual.
func TestSubscribeWakesOnceNewChannelIsListened(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	l := d.listener(t, pgstore.ListenerSettings{})
	q, err := pgstore.NewQueue(d.pool, nil, pgstore.Settings{Listener: l, Channel: d.schema + "_new"})
	if err != nil {
		t.Fatal(err)
	}
	wake, stop := q.Subscribe("")
	defer stop()
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake once the new channel was LISTENed")
	}
	if err := l.Listen(ctx, q.Channel()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
		t.Fatal("a second wake without an enqueue")
	case <-time.After(100 * time.Millisecond):
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake for an enqueue on the new channel")
	}
	// A second subscriber on a channel already LISTENed gets no such wake.
	again, stopAgain := q.Subscribe("")
	defer stopAgain()
	select {
	case <-again:
		t.Fatal("a subscriber of a channel already LISTENed was woken for nothing")
	case <-time.After(100 * time.Millisecond):
	}
}
