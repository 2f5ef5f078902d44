//go:build integration

package redistest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/redisstore/redistest"
)

// A server with an append-only file fsynced on every write keeps what it
// acknowledged across a SIGKILL: Start replays the file.
func TestServerKillReplaysTheAppendOnlyFile(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	c := srv.Client(t, nil)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	srv.Start()
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("after the restart: %q, %v; want the acknowledged write", got, err)
	}
}

// Without settings that say otherwise a server keeps nothing on disk.
func TestServerIsVolatileByDefault(t *testing.T) {
	c := redistest.StartServer(t).Client(t, nil)
	cfg, err := c.ConfigGet(context.Background(), "appendonly").Result()
	if err != nil || cfg["appendonly"] != "no" {
		t.Fatalf("appendonly = %v, %v; want no", cfg, err)
	}
}

// Namespace's clean-up reaches every master of a cluster; Keys lists
// the namespace's keys from all of them.
func TestNamespaceOnACluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t, nil)
	var ns string
	t.Run("write", func(t *testing.T) {
		ns = redistest.Namespace(t, c)
		// State keys tag the tenant, so tenants spread over the masters.
		for _, tenant := range []string{"a", "b", "c", "d", "e", "f"} {
			if err := c.Set(ctx, ns+":state:{"+tenant+"}:x", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Set(ctx, "{"+ns+":queue}:token", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := redistest.Keys(ctx, c, ns)
		if err != nil || len(keys) != 7 {
			t.Fatalf("Keys: %d keys %v, %v; want 7", len(keys), keys, err)
		}
	})
	keys, err := redistest.Keys(ctx, c, ns)
	if err != nil || len(keys) != 0 {
		t.Fatalf("after the test that owned it: %v, %v; want the namespace empty", keys, err)
	}
}

// Slot agrees with CLUSTER KEYSLOT; a slot moved with the steps of a
// reshard ends on its new owner with its keys, and leaves no slot open.
func TestSlotMove(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t, nil)
	const key = "{move}:k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key, "123456789", "foo", "{user1000}.a", "{}x", "a{b}c", "{" + key + "}"} {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if got := redistest.Slot(k); err != nil || int64(got) != want {
			t.Errorf("Slot(%q) = %d; CLUSTER KEYSLOT says %d, %v", k, got, want, err)
		}
	}
	slot := redistest.Slot(key)
	from, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := cl.NewSlotMove(ctx, slot, (from+1)%3)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := mv.Run(ctx); err != nil || n != 1 {
		t.Fatalf("Run: %d keys, %v; want 1", n, err)
	}
	if owner, err := cl.Owner(ctx, slot); err != nil || owner != mv.To {
		t.Fatalf("owner after the move: %d, %v; want %d", owner, err, mv.To)
	}
	if open, err := cl.OpenSlots(ctx); err != nil || len(open) != 0 {
		t.Fatalf("open slots: %v, %v", open, err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET after the move: %q, %v", got, err)
	}
}

// A cluster with a replica per master: killing the master of a slot
// promotes its replica, which serves the slot with the key it had
// replicated; the old master comes back as the new one's replica; a slot
// moved with the steps of a reshard reaches every master, not the
// replicas, and leaves no slot open.
func TestClusterFailover(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: 1, NodeTimeout: time.Second})
	if len(cl.Nodes) != 6 {
		t.Fatalf("%d nodes; want 3 masters and 3 replicas", len(cl.Nodes))
	}
	if m, err := cl.Masters(ctx); err != nil || !slices.Equal(m, []int{0, 1, 2}) {
		t.Fatalf("masters %v, %v; want 0 1 2", m, err)
	}
	c := cl.Client(t, nil)
	const key = "{failover}:k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot := redistest.Slot(key)
	owner, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	replicas, err := cl.ReplicasOf(ctx, owner)
	if err != nil || !slices.Equal(replicas, []int{3 + owner}) {
		t.Fatalf("replicas of node %d: %v, %v; want node %d", owner, replicas, err, 3+owner)
	}
	// The replica has the key before its master dies.
	if n, err := cl.Nodes[owner].Client(t, nil).Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	promoted, took, err := cl.Failover(ctx, owner, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d promoted %v after its master's kill", promoted, took)
	if promoted != replicas[0] {
		t.Fatalf("promoted node %d; want %d", promoted, replicas[0])
	}
	if got, err := cl.Owner(ctx, slot); err != nil || got != promoted {
		t.Fatalf("owner after the failover: %d, %v; want %d", got, err, promoted)
	}
	// A fresh client: the first one's slot map names the dead node until
	// go-redis reloads it.
	c = cl.Client(t, nil)
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET after the failover: %q, %v", got, err)
	}
	if err := cl.Rejoin(ctx, owner, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if r, err := cl.ReplicasOf(ctx, promoted); err != nil || !slices.Equal(r, []int{owner}) {
		t.Fatalf("replicas of the promoted node: %v, %v; want the old master %d", r, err, owner)
	}
	mv, err := cl.NewSlotMove(ctx, slot, (owner+1)%3)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := mv.Run(ctx); err != nil || n != 1 {
		t.Fatalf("move after the failover: %d keys, %v; want 1", n, err)
	}
	if open, err := cl.OpenSlots(ctx); err != nil || len(open) != 0 {
		t.Fatalf("open slots: %v, %v", open, err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET after the move: %q, %v", got, err)
	}
}

// A write the master acknowledged while its replica held the replication
// stream is lost when the master is killed then: the promoted replica has
// the writes before the hold and not that one.
func TestClusterFailoverLosesWhatTheReplicaHeld(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartClusterWith(t, redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: 1, NodeTimeout: time.Second})
	const before, during = "{held}:before", "{held}:during"
	owner, err := cl.Owner(ctx, redistest.Slot(before))
	if err != nil {
		t.Fatal(err)
	}
	m := cl.Nodes[owner].Client(t, nil)
	if err := m.Set(ctx, before, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}
	replicas, err := cl.ReplicasOf(ctx, owner)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas of node %d: %v, %v", owner, replicas, err)
	}
	if err := cl.HoldReplication(ctx, replicas[0], 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Set(ctx, during, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Do(ctx, "WAIT", 1, 100).Int(); err != nil || n != 0 {
		t.Fatalf("WAIT 1 during the hold: %d, %v; want no replica to have the write", n, err)
	}
	promoted, _, err := cl.Failover(ctx, owner, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p := cl.Nodes[promoted].Client(t, nil)
	if got, err := p.Get(ctx, before).Result(); err != nil || got != "v" {
		t.Errorf("the write before the hold on the promoted replica: %q, %v", got, err)
	}
	if n, err := p.Exists(ctx, during).Result(); err != nil || n != 0 {
		t.Errorf("the write during the hold on the promoted replica: %d, %v; want it lost", n, err)
	}
}

// The package example runs as a test in this lane.
func TestExample(t *testing.T) { testQueueKeepsItsItemsAcrossACrash(t) }
