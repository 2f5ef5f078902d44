//go:build integration

package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestWakesShareOneSubscription: many subscribers of a queue are woken by
// one pub/sub subscription, wakes are counted in Stats, and ending the
// last subscription releases it (goleak in TestMain checks the goroutine).
func TestWakesShareOneSubscription(t *testing.T) {
	ctx := context.Background()
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var chans []<-chan struct{}
	var stops []func()
	for range 5 {
		ch, stop := q.Subscribe("jobs")
		chans = append(chans, ch)
		stops = append(stops, stop)
	}
	if n, err := client.PubSubNumSub(ctx, ns+":wake:4:jobs").Result(); err != nil || n[ns+":wake:4:jobs"] != 1 {
		t.Errorf("subscriptions on the wake channel: %v, %v; want 1 shared by all", n, err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "1", Queue: "jobs"}); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("subscriber %d not woken within 5s", i)
		}
	}
	if st := q.Stats(); st.Wakes < 1 || st.LastWake.IsZero() {
		t.Errorf("Stats after a wake: %+v", st)
	}
	for _, stop := range stops {
		stop()
		stop() // a second call is harmless
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := client.PubSubNumSub(ctx, ns+":wake:4:jobs").Result()
		if err == nil && n[ns+":wake:4:jobs"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscription outlived its subscribers: %v, %v", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
