//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/integration/internal/proxy"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// A PatchRun whose reply is lost is retried by redisstore with the same
// nonce, and the script skips a nonce it has seen. The run remembers its
// last 16 nonces: this test lands `others` patches from another client
// between the lost reply and the retry, and checks the retried patch is
// still counted once.
func TestRedisPatchReplayAfterLostReply(t *testing.T) {
	for _, others := range []int{5, 15, 16, 17, 40} {
		t.Run(fmt.Sprintf("%d patches between", others), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv := redistest.StartServer(t)
			px, err := proxy.Start(srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			direct := srv.Client(t, nil)
			settings := redisstore.Settings{Namespace: "replay"}
			other, err := redisstore.NewState(direct, contract.SystemClock{}, settings)
			if err != nil {
				t.Fatal(err)
			}
			// The victim's client goes through the proxy and waits 500 ms for
			// a reply; go-redis's own retries are off so redisstore's budget
			// is the one that retries.
			vc := redis.NewClient(&redis.Options{Addr: px.Addr(), ReadTimeout: 500 * time.Millisecond, MaxRetries: -1, PoolSize: 1})
			defer vc.Close()
			victim, err := redisstore.NewState(vc, contract.SystemClock{}, settings)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.PutRun(ctx, contract.Run{Tenant: "acme", ID: "hot"}); err != nil {
				t.Fatal(err)
			}
			// Warm the victim's connection, and load the patch script so the
			// muted call runs it at once (a NOSCRIPT reply would be muted too).
			if _, err := victim.PatchRun(ctx, "acme", "hot", contract.Patch{Status: "warm"}); err != nil {
				t.Fatal(err)
			}

			px.Mute()
			done := make(chan error, 1)
			go func() {
				_, err := victim.PatchRun(ctx, "acme", "hot", contract.Patch{Counters: contract.Counters{Iterations: 1}})
				done <- err
			}()
			// Wait until the muted patch has landed on the server.
			for deadline := time.Now().Add(10 * time.Second); ; {
				if time.Now().After(deadline) {
					t.Fatal("the muted patch never reached the server")
				}
				r, err := other.GetRun(ctx, "acme", "hot")
				if err != nil {
					t.Fatal(err)
				}
				if r.Counters.Iterations == 1 {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			for range others {
				if _, err := other.PatchRun(ctx, "acme", "hot", contract.Patch{Counters: contract.Counters{Cursor: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			px.Unmute()
			px.Cut() // the victim's connection is broken; its retry dials again
			if err := <-done; err != nil {
				t.Fatalf("the victim's patch failed instead of being retried: %v", err)
			}
			r, err := other.GetRun(ctx, "acme", "hot")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("after a lost reply and %d other patches: iterations=%d cursor=%d", others, r.Counters.Iterations, r.Counters.Cursor)
			if r.Counters.Iterations != 1 || r.Counters.Cursor != int64(others) {
				t.Errorf("the retried patch was counted %d times (cursor %d, want %d): a reply lost while more than 16 other patches landed on the run doubles it", r.Counters.Iterations, r.Counters.Cursor, others)
			}
		})
	}
}
