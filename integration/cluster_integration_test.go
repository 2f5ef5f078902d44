//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// queuePrefix is the key prefix of a redisstore queue (its slot is the
// namespace's hash tag).
func queuePrefix(ns, queue string) string {
	return fmt.Sprintf("{%s:queue}:q:%d:%s:", ns, len(queue), queue)
}

// The queue's slot is moved back and forth between the three masters of
// a cluster while workers run the load: each move marks the slot
// migrating, MIGRATEs its keys ten at a time and assigns it, the steps of
// redis-cli --cluster reshard. Scripts that reach a node while the
// queue's keys are split are refused whole (TRYAGAIN, ASK) and retried;
// the oracle holds with no allowance, and every move completes (no slot
// is left migrating, no MIGRATE meets a key the target already has).
func TestFaultClusterReshard(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ns := "adkreshard"
	target := oracle.Target{Backing: oracle.Redis, Cluster: cl.Addrs(), Namespace: ns}
	slot := redistest.Slot(queuePrefix(ns, contract.DefaultQueue))
	var workers []oracle.WorkerConfig
	for i := range 2 {
		w := workerDefaults(target, fmt.Sprintf("w%d", i))
		w.Concurrency, w.HandlerDelay = 4, 40*time.Millisecond
		workers = append(workers, w)
	}
	var moves, keys int
	var longest time.Duration
	out := runLoad(t, load{target: target, direct: target, workers: workers,
		inject: func(t *testing.T, ctx context.Context, e *env) []string {
			if !waitProgress(ctx, e.fleet, K/10) {
				return nil
			}
			for e.fleet.Acked() < K*9/10 && moves < 40 {
				owner, err := cl.Owner(ctx, slot)
				if err != nil {
					t.Error(err)
					break
				}
				mv, err := cl.NewSlotMove(ctx, slot, (owner+1)%len(cl.Nodes))
				if err != nil {
					t.Error(err)
					break
				}
				began := time.Now()
				n, err := mv.Run(ctx)
				if err != nil {
					t.Errorf("move %d of slot %d (node %d to %d) did not complete: %v", moves+1, slot, mv.From, mv.To, err)
					break
				}
				moves++
				keys += n
				longest = max(longest, time.Since(began))
				time.Sleep(20 * time.Millisecond)
			}
			return []string{fmt.Sprintf("%d moves of slot %d between 3 masters (%d keys migrated, longest move %v)",
				moves, slot, keys, longest.Round(time.Millisecond))}
		}})
	if moves < 10 {
		t.Errorf("only %d moves of the queue's slot happened during the load; want at least 10", moves)
	}
	open, err := cl.OpenSlots(context.Background())
	if err != nil || len(open) > 0 {
		t.Errorf("slots left migrating or importing after the reshards: %v %v", open, err)
	}
	t.Logf("reshard: %d moves, %d keys migrated, longest %v; worker errors %v", moves, keys, longest.Round(time.Millisecond), out.fleet.Counts())
}

// The queue's slot is left half-moved: every queue key but the records
// on the new node, the records on the old. Every queue operation is then
// refused before its script runs (TRYAGAIN until the retry budget ends)
// and writes nothing on either node; when the move completes the same
// calls succeed.
func TestClusterSplitSlotRefusesWholeScripts(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	client := cl.Client(t, &redis.ClusterOptions{MaxRedirects: 2})
	ns := "adksplit"
	budget := redisstore.RetryBudget{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns, RetryBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var items []contract.Item
	for _, id := range []string{"1", "2", "3", "4"} {
		items = append(items, contract.Item{Tenant: "acme", ID: id})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	held, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}

	prefix := queuePrefix(ns, contract.DefaultQueue)
	slot := redistest.Slot(prefix)
	mv, keys := beginSlotMove(t, cl, slot)
	if len(keys) < 10 {
		t.Fatalf("the queue's slot holds %d keys (%v)", len(keys), keys)
	}
	var rest []string
	for _, k := range keys {
		if k != prefix+"items" {
			rest = append(rest, k)
		}
	}
	if err := mv.Migrate(ctx, rest...); err != nil {
		t.Fatal(err)
	}
	before := dumpSlot(t, cl, slot)

	calls := []struct {
		name string
		call func() error
	}{
		{"Enqueue", func() error { return q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "5"}) }},
		{"Claim", func() error {
			_, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 2})
			return err
		}},
		{"Complete", func() error { return q.Complete(ctx, held...) }},
		{"Heartbeat", func() error { _, err := q.Heartbeat(ctx, held[0], time.Minute); return err }},
		{"Fail", func() error { _, err := q.Fail(ctx, held[0], errors.New("x")); return err }},
		{"CompleteAndClaim", func() error {
			_, err := q.CompleteAndClaim(ctx, held, contract.ClaimRequest{LeaseFor: time.Minute, Max: 2})
			return err
		}},
		{"Reap", func() error { _, err := q.Reap(ctx, ""); return err }},
		{"Requeue", func() error { _, err := q.Requeue(ctx, contract.DeadLetterFilter{}); return err }},
	}
	for _, c := range calls {
		err := c.call()
		var qu *contract.QueueUnavailableError
		if !errors.As(err, &qu) || !strings.Contains(err.Error(), "TRYAGAIN") {
			t.Errorf("%s on a split slot: %v; want a QueueUnavailableError after TRYAGAIN", c.name, err)
		}
	}
	if after := dumpSlot(t, cl, slot); !maps.Equal(before, after) {
		t.Errorf("the refused calls changed the split slot:\nbefore %v\nafter  %v", keysOf(before), keysOf(after))
	}

	if err := mv.Migrate(ctx, prefix+"items"); err != nil {
		t.Fatal(err)
	}
	if err := mv.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Heartbeat(ctx, held[0], time.Minute); err != nil {
		t.Errorf("heartbeat after the move: %v", err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 3 {
		t.Errorf("claim after the move: %d leases, %v; want the 3 left", len(ls), err)
	}
}

// dumpSlot returns, for every key of slot on any node, the node and the
// key's serialized value (DUMP).
func dumpSlot(t *testing.T, cl *redistest.Cluster, slot int) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for i, n := range cl.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		keys, err := c.ClusterGetKeysInSlot(ctx, slot, 100000).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			// ASKING first: the importing node answers for the slot's
			// keys only after it.
			pipe := c.Pipeline()
			pipe.Do(ctx, "ASKING")
			dump := pipe.Dump(ctx, k)
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("node%d %s", i, k)] = dump.Val()
		}
		_ = c.Close()
	}
	return out
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
