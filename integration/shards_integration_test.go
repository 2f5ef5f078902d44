//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// testShards is the Settings.Shards of the sharded-queue fault tests: one
// shard per master of their three-master clusters.
const testShards = 3

// shardSlots returns the cluster slot of each of a queue's n shards in
// namespace ns, by the rule redisstore documents for its shard keys: one
// shard is the namespace's queue tag; with more, shard i's tag is
// "<ns>:queue:<i>.<k>" with the smallest k whose slot falls in the i-th of
// n equal slot ranges.
func shardSlots(ns string, n int) []int {
	if n <= 1 {
		return []int{redistest.Slot(queuePrefix(ns, contract.DefaultQueue))}
	}
	var out []int
	for i := range n {
		lo, hi := i*16384/n, (i+1)*16384/n
		for k := 0; ; k++ {
			s := redistest.Slot("{" + ns + ":queue:" + strconv.Itoa(i) + "." + strconv.Itoa(k) + "}")
			if s >= lo && s < hi {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// checkShardSlots compares shardSlots with what the queue itself reports
// when it is a ShardReporter, so the tests move the slots the queue uses.
func checkShardSlots(t *testing.T, q contract.WorkQueue, slots []int) {
	t.Helper()
	r, ok := contract.AsShardReporter(q)
	if !ok {
		if len(slots) > 1 {
			t.Fatalf("a queue of %d shards is no contract.ShardReporter", len(slots))
		}
		return
	}
	got, err := r.Shards(context.Background(), contract.DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(slots) {
		t.Fatalf("the queue reports %d shards; want %d", len(got), len(slots))
	}
	for i, sh := range got {
		if sh.Slot != slots[i] {
			t.Fatalf("the queue reports shard %d in slot %d; the test computed %d", i, sh.Slot, slots[i])
		}
	}
}

// producer enqueues specs in batches of ten, pause apart, noting when
// each batch was acknowledged; an enqueue that fails fails the test.
type producer struct {
	mu       sync.Mutex
	enqueued map[string]time.Time
}

func (p *producer) run(t *testing.T, ctx context.Context, s *oracle.Stores, specs []oracle.Spec, pause time.Duration) {
	for i := 0; i < len(specs); i += 10 {
		batch := specs[i:min(i+10, len(specs))]
		if err := oracle.Enqueue(ctx, s, batch); err != nil {
			t.Errorf("producer: %v", err)
			return
		}
		now := time.Now()
		p.mu.Lock()
		for _, sp := range batch {
			p.enqueued[sp.Tenant+"\x00"+sp.ID] = now
		}
		p.mu.Unlock()
		time.Sleep(pause)
	}
}

func (p *producer) snapshot() map[string]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]time.Time, len(p.enqueued))
	for k, v := range p.enqueued {
		out[k] = v
	}
	return out
}

// shardWorkers are the sharded tests' two worker processes.
func shardWorkers(target oracle.Target) []oracle.WorkerConfig {
	var workers []oracle.WorkerConfig
	for i := range 2 {
		w := workerDefaults(target, fmt.Sprintf("w%d", i))
		w.Concurrency, w.HandlerDelay = 4, 30*time.Millisecond
		workers = append(workers, w)
	}
	return workers
}

// A queue of testShards shards on three masters, half its items enqueued
// before the workers start and half by a producer while one shard's slot
// is moved, with all its keys, to the master of another shard and back,
// by the steps of redis-cli --cluster reshard (mark the slot migrating,
// MIGRATE its keys ten at a time, assign it). Claims, completes and
// enqueues that reach a node mid-move are redirected (MOVED, ASK) or
// refused whole (TRYAGAIN) and retried: the oracle holds with no
// allowance, 0 lost and 0 run twice, and no slot is left open.
func TestFaultShardsReshard(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ns := "adkshardmove"
	target := oracle.Target{Backing: oracle.Redis, Cluster: cl.Addrs(), Namespace: ns, Shards: testShards}
	slots := shardSlots(ns, testShards)
	slot := slots[0]
	var (
		moves, keys int
		longest     time.Duration
		home, away  int
	)
	out := runLoad(t, load{target: target, direct: target, workers: shardWorkers(target), firstWave: K / 2,
		inject: func(t *testing.T, ctx context.Context, e *env) []string {
			checkShardSlots(t, e.parent.Queue, slots)
			var err error
			if home, err = cl.Owner(ctx, slot); err != nil {
				t.Error(err)
				return nil
			}
			// Another shard's master when there is one, else the next.
			away = (home + 1) % len(cl.Nodes)
			if len(slots) > 1 {
				if away, err = cl.Owner(ctx, slots[1]); err != nil {
					t.Error(err)
					return nil
				}
			}
			if !waitProgress(ctx, e.fleet, K/10) {
				return nil
			}
			p := &producer{enqueued: map[string]time.Time{}}
			var wave sync.WaitGroup
			wave.Go(func() { p.run(t, ctx, e.parent, e.specs[K/2:], 20*time.Millisecond) })
			for (e.fleet.Acked() < K*9/10 || len(p.snapshot()) < K/2) && moves < 30 && ctx.Err() == nil {
				to := away
				if moves%2 == 1 {
					to = home
				}
				mv, err := cl.NewSlotMove(ctx, slot, to)
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
			wave.Wait()
			return []string{fmt.Sprintf("%d moves of shard 0's slot %d between node %d and node %d (%d keys migrated, longest move %v) while %d items were enqueued",
				moves, slot, home, away, keys, longest.Round(time.Millisecond), K/2)}
		}})
	if moves < 4 {
		t.Errorf("only %d moves of the shard's slot happened during the load; want at least 4", moves)
	}
	if n := len(out.report.Forgiven); n > 0 {
		t.Errorf("the oracle forgave %d losses with no allowance", n)
	}
	open, err := cl.OpenSlots(context.Background())
	if err != nil || len(open) > 0 {
		t.Errorf("slots left migrating or importing after the moves: %v %v", open, err)
	}
	t.Logf("SHARDS reshard: %d shards, %d moves of slot %d, %d keys migrated, longest %v; %s", testShards, moves, slot, keys, longest.Round(time.Millisecond), out.report.Summary())
}

// shardFailoverLoad runs the sharded load on three masters with a replica
// each (six processes) and SIGKILLs the master of shard 0 once a sixth of
// the items are done, while a producer enqueues the second half; its
// replica is promoted after cluster-node-timeout. Replication is
// asynchronous: what the killed master acknowledged and had not yet sent
// is lost with it. The oracle forgives only writes acknowledged in the
// 200 ms before the kill (a replica in sync on loopback is far closer
// behind than that) and holds everything else, re-execution of an item
// done before that window included, to the strict rules. With lag set,
// shard 0's replica holds its master's stream (redistest's
// HoldReplication) for that long before the kill: the master
// acknowledges writes the replica never applies, and the window opens
// 200 ms before the hold.
func shardFailoverLoad(t *testing.T, lag time.Duration) (outcome, int) {
	cl := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: 1, NodeTimeout: 2 * time.Second})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, n := range cl.Nodes {
			b, _ := os.ReadFile(filepath.Join(n.Dir, "redis.log"))
			t.Logf("node %d log:\n%s", i, lastBytes(string(b), 4000))
		}
	})
	ns := "adkshardfail"
	// go-redis reloads a cluster's slot map every 60s by default, and a
	// refused dial to the dead master does not make it reload sooner:
	// calls to the failed shard would fail for up to a minute, past the
	// stores' 45s retry budget. docs/deploying.md says to set it.
	target := oracle.Target{Backing: oracle.Redis, Cluster: cl.Addrs(), Namespace: ns, Shards: testShards,
		ClusterReload: 2 * time.Second}
	slots := shardSlots(ns, testShards)
	const window = 200 * time.Millisecond
	var (
		mu             sync.Mutex
		killedAt       time.Time
		ackedBefore    int
		prod           = &producer{enqueued: map[string]time.Time{}}
		victim, heir   int
		promoted, gap  time.Duration
		ackedThenTotal int
		windowFrom     time.Time
	)
	l := load{target: target, direct: target, workers: shardWorkers(target), firstWave: K / 2,
		inject: func(t *testing.T, ctx context.Context, e *env) []string {
			checkShardSlots(t, e.parent.Queue, slots)
			var err error
			if victim, err = cl.Owner(ctx, slots[0]); err != nil {
				t.Error(err)
				return nil
			}
			if !waitProgress(ctx, e.fleet, K/6) {
				return nil
			}
			var wave sync.WaitGroup
			wave.Go(func() { prod.run(t, ctx, e.parent, e.specs[K/2:], 30*time.Millisecond) })
			// The kill lands while the producer is under way.
			time.Sleep(150 * time.Millisecond)
			held := time.Now()
			if lag > 0 {
				replicas, err := cl.ReplicasOf(ctx, victim)
				if err != nil || len(replicas) == 0 {
					t.Errorf("replicas of node %d: %v, %v", victim, replicas, err)
					wave.Wait()
					return nil
				}
				// Held past the kill, so the replica never applies them.
				if err := cl.HoldReplication(ctx, replicas[0], lag+time.Second); err != nil {
					t.Error(err)
				}
				time.Sleep(lag)
			}
			mu.Lock()
			windowFrom = held.Add(-window)
			ackedBefore, ackedThenTotal = e.fleet.Acked(), len(e.fleet.Acks())
			killedAt = time.Now()
			mu.Unlock()
			heir, promoted, err = cl.Failover(ctx, victim, time.Minute)
			if err != nil {
				t.Error(err)
				wave.Wait()
				return nil
			}
			for gap == 0 && ctx.Err() == nil && time.Since(killedAt) < 2*time.Minute {
				for _, a := range e.fleet.Acks() {
					if a.At > killedAt.UnixNano() {
						gap = time.Unix(0, a.At).Sub(killedAt)
						break
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			wave.Wait()
			return []string{fmt.Sprintf("SIGKILL of node %d (shard 0's master) after %d items acknowledged, node %d promoted after %v, first acknowledgement after the kill %v later",
				victim, ackedBefore, heir, promoted.Round(time.Millisecond), gap.Round(time.Millisecond))}
		},
		allowance: func() *oracle.Allowance {
			mu.Lock()
			defer mu.Unlock()
			return &oracle.Allowance{From: windowFrom, To: killedAt, Enqueued: prod.snapshot()}
		}}
	out := runLoad(t, l)
	if len(out.faults) != 1 {
		t.Fatal("the master was not killed mid-load")
	}
	// Acknowledged executions in the window before the kill: the most the
	// failover could have lost.
	inWindow := 0
	for _, a := range out.fleet.Acks()[:ackedThenTotal] {
		if a.At >= windowFrom.UnixNano() {
			inWindow++
		}
	}
	t.Logf("SHARDS failover (replica held %v): %d shards; %d items acknowledged before the kill, %d executions acknowledged in the %v before it; lost with the master: %d items' acknowledged writes (%s); %s",
		lag, testShards, ackedBefore, inWindow, killedAt.Sub(windowFrom).Round(time.Millisecond), len(out.report.Forgiven), lossKinds(out.report.Forgiven), out.report.Summary())
	return out, ackedBefore
}

// A master of a sharded queue is SIGKILLed mid-load and its replica
// promoted. Nothing is done twice and nothing acknowledged more than
// 200 ms before the kill is lost (the oracle's strict rules outside
// that window); what the window lost is listed by kind and counted.
func TestFaultShardsFailover(t *testing.T) {
	out, before := shardFailoverLoad(t, 0)
	if before == 0 || before >= K {
		t.Errorf("the kill came after %d acknowledged items; want it mid-load", before)
	}
	if out.report.Completed == 0 {
		t.Error("nothing completed")
	}
}

// lastBytes is the end of s, at most n bytes of it.
func lastBytes(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// As TestFaultShardsFailover, with shard 0's replica holding its master's
// stream for the 300 ms before the kill: what the master acknowledged in
// them is lost with it. The oracle forgives those writes, lists them by
// kind, and holds everything else to the strict rules; there must be some.
func TestFaultShardsFailoverLaggingReplica(t *testing.T) {
	out, _ := shardFailoverLoad(t, 300*time.Millisecond)
	if len(out.report.Forgiven) == 0 {
		t.Error("the kill after a 300 ms hold lost nothing: the replica did not lag")
	}
}
