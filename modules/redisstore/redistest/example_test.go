package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// testQueueKeepsItsItemsAcrossACrash is a test of a queue on a
// redis-server of its own, with an append-only file fsynced on every
// write, that it kills and starts again; the queue's keys on the shared
// server would be in a namespace of the test's own
// (redistest.Namespace(t, redistest.Client(t))).
func testQueueKeepsItsItemsAcrossACrash(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	client := srv.Client(t, nil)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: redistest.Namespace(t, client)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	srv.Kill() // SIGKILL: only what was fsynced survives
	srv.Start()
	if _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1}); err != nil {
		t.Fatalf("claim after the restart: %v", err)
	}
}

// A test's own redis-server, killed and started again: the whole file
// shows the test.
func Example() {
	_ = testQueueKeepsItsItemsAcrossACrash
}
