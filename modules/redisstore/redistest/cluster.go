package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster started by a test: its masters first in
// Nodes, then their replicas (see ClusterOptions).
type Cluster struct {
	Nodes []*Server
	ids   []string
}

// ClusterOptions shape the cluster StartClusterWith starts.
type ClusterOptions struct {
	// Masters is how many masters share the 16384 slots (at least 3, as
	// redis-cli --cluster create asks).
	Masters int
	// ReplicasPerMaster is how many replicas each master gets. Nodes
	// lists the masters first; master i's replicas are
	// Nodes[Masters+i*ReplicasPerMaster:][:ReplicasPerMaster].
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how long a master must be
	// unreachable before it is called failed and a replica is promoted
	// (0 means 5s).
	NodeTimeout time.Duration
	// Args are extra arguments of every node's redis-server.
	Args []string
}

// StartCluster starts n masters with cluster mode on (persistence off
// unless args say otherwise), joins them with redis-cli --cluster create,
// waits until every node reports cluster_state:ok, and kills them all
// when the test ends.
func StartCluster(t testing.TB, n int, args ...string) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{Masters: n, Args: args})
}

// StartClusterWith is StartCluster with replicas: it starts the masters
// and joins them, then joins each replica to the cluster and makes it
// replicate its master (CLUSTER MEET, CLUSTER REPLICATE), and waits until
// every replica is in sync and every node knows every other one with its
// role, so that a master killed afterwards is failed over.
func StartClusterWith(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli is not on PATH; install redis-tools to run the cluster tests")
	}
	if o.Masters < 3 || o.ReplicasPerMaster < 0 {
		t.Fatalf("redistest: ClusterOptions %+v: give at least 3 masters and 0 or more replicas per master", o)
	}
	timeout := o.NodeTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	cl := &Cluster{}
	for range o.Masters * (1 + o.ReplicasPerMaster) {
		a := append([]string{"--appendonly", "no", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10)}, o.Args...)
		s := newServer(t, a)
		s.bus = FreePort(t)
		s.Start()
		t.Cleanup(s.Kill)
		cl.Nodes = append(cl.Nodes, s)
	}
	ctx := context.Background()
	for i := range cl.Nodes {
		c := cl.node(i)
		id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		cl.ids = append(cl.ids, id)
	}
	create := append([]string{"--cluster", "create"}, cl.Addrs()[:o.Masters]...)
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for r := o.Masters; r < len(cl.Nodes); r++ {
		m := (r - o.Masters) / o.ReplicasPerMaster
		c := cl.node(r)
		if err := c.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", cl.Nodes[m].Port, cl.Nodes[m].bus).Err(); err != nil {
			t.Fatalf("cluster meet: %v", err)
		}
		// REPLICATE needs the master known, which the gossip after MEET
		// brings.
		var err error
		waitFor(t, 30*time.Second, "replica "+cl.Nodes[r].Addr()+" to learn its master", func() bool {
			err = c.Do(ctx, "CLUSTER", "REPLICATE", cl.ids[m]).Err()
			return err == nil
		})
		_ = c.Close()
	}
	for i := range cl.Nodes {
		c := cl.node(i)
		waitFor(t, 30*time.Second, "cluster node "+cl.Nodes[i].Addr()+" to be ok and know every node's role", func() bool {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			view, err := cl.view(ctx, i)
			if err != nil || len(view) != len(cl.Nodes) {
				return false
			}
			for j, id := range cl.ids {
				want := ""
				if j >= o.Masters {
					want = cl.ids[(j-o.Masters)/o.ReplicasPerMaster]
				}
				if v, ok := view[id]; !ok || v.masterID != want {
					return false
				}
			}
			if i < o.Masters {
				return true
			}
			repl, err := c.Info(ctx, "replication").Result()
			return err == nil && containsLine(repl, "master_link_status:up")
		})
		_ = c.Close()
	}
	return cl
}

// nodeView is one line of CLUSTER NODES: a node's flags and, for a
// replica, its master's id.
type nodeView struct {
	flags    string
	masterID string // "" for a master
}

func (v nodeView) master() bool { return strings.Contains(v.flags, "master") }
func (v nodeView) failed() bool { return strings.Contains(v.flags, "fail") }

// view parses CLUSTER NODES as node i sees it, by node id.
func (c *Cluster) view(ctx context.Context, i int) (map[string]nodeView, error) {
	n := c.node(i)
	defer n.Close()
	s, err := n.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]nodeView{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		v := nodeView{flags: f[2]}
		if f[3] != "-" {
			v.masterID = f[3]
		}
		out[f[0]] = v
	}
	return out, nil
}

// live returns the index of a node whose process runs, preferring want.
func (c *Cluster) live(want int) int {
	if want >= 0 && want < len(c.Nodes) && c.Nodes[want].Running() {
		return want
	}
	for i, s := range c.Nodes {
		if s.Running() {
			return i
		}
	}
	return want
}

// Masters returns the indexes of the nodes that serve slots now, as a
// running node sees them (failed masters left out).
func (c *Cluster) Masters(ctx context.Context) ([]int, error) {
	view, err := c.view(ctx, c.live(0))
	if err != nil {
		return nil, err
	}
	var out []int
	for i, id := range c.ids {
		if v, ok := view[id]; ok && v.master() && !v.failed() {
			out = append(out, i)
		}
	}
	return out, nil
}

// ReplicasOf returns the indexes of master i's replicas, as a running
// node sees them.
func (c *Cluster) ReplicasOf(ctx context.Context, i int) ([]int, error) {
	view, err := c.view(ctx, c.live(i))
	if err != nil {
		return nil, err
	}
	var out []int
	for j, id := range c.ids {
		if v, ok := view[id]; ok && v.masterID == c.ids[i] {
			out = append(out, j)
		}
	}
	return out, nil
}

// Failover SIGKILLs master i and waits, up to limit, until one of its
// replicas has taken its slots: it calls itself master, every running
// node names it master and reports cluster_state:ok. It returns the
// promoted node's index and how long after the kill that was. Node i
// stays down; Rejoin brings it back as a replica.
func (c *Cluster) Failover(ctx context.Context, i int, limit time.Duration) (int, time.Duration, error) {
	replicas, err := c.ReplicasOf(ctx, i)
	if err != nil {
		return 0, 0, err
	}
	if len(replicas) == 0 {
		return 0, 0, fmt.Errorf("node %d has no replica to fail over to", i)
	}
	c.Nodes[i].Kill()
	killed := time.Now()
	for {
		for _, r := range replicas {
			if c.Nodes[r].Running() && c.promoted(ctx, r) {
				return r, time.Since(killed), nil
			}
		}
		if time.Since(killed) > limit {
			return 0, 0, fmt.Errorf("no replica of node %d (%v) was promoted within %v of its kill", i, replicas, limit)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// promoted reports whether every running node names node r a master and
// reports cluster_state:ok.
func (c *Cluster) promoted(ctx context.Context, r int) bool {
	for j, s := range c.Nodes {
		if !s.Running() {
			continue
		}
		view, err := c.view(ctx, j)
		if err != nil {
			return false
		}
		if v, ok := view[c.ids[r]]; !ok || !v.master() || v.failed() {
			return false
		}
		if !c.stateOK(ctx, j) {
			return false
		}
	}
	return true
}

func (c *Cluster) stateOK(ctx context.Context, i int) bool {
	n := c.node(i)
	defer n.Close()
	info, err := n.ClusterInfo(ctx).Result()
	return err == nil && strings.Contains(info, "cluster_state:ok")
}

// HoldReplication makes replica i stop applying its master's stream for
// d while the master goes on acknowledging writes: CLIENT PAUSE WRITE on
// the replica holds the commands its master sends with its clients'
// writes. A master killed before d has passed loses what it acknowledged
// meanwhile, as one whose replica lags d behind would; the replica is
// still promoted (the pause holds no cluster traffic).
func (c *Cluster) HoldReplication(ctx context.Context, i int, d time.Duration) error {
	n := c.node(i)
	defer n.Close()
	return n.Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err()
}

// Rejoin starts node i again (a master Failover killed) and waits, up to
// limit, until it has come back as a replica of the master that took its
// slots, in sync with it. Without persistence it comes back empty and
// takes its new master's data.
func (c *Cluster) Rejoin(ctx context.Context, i int, limit time.Duration) error {
	c.Nodes[i].Start()
	n := c.node(i)
	defer n.Close()
	deadline := time.Now().Add(limit)
	for {
		view, err := c.view(ctx, i)
		if err == nil {
			if v := view[c.ids[i]]; v.masterID != "" && c.stateOK(ctx, i) {
				repl, err := n.Info(ctx, "replication").Result()
				if err == nil && containsLine(repl, "master_link_status:up") {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d did not rejoin as an in-sync replica within %v", i, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Client returns a client of the cluster with the options opt (nil for
// go-redis's defaults; its Addrs are set here), closed when the test
// ends.
func (c *Cluster) Client(t testing.TB, opt *redis.ClusterOptions) *redis.ClusterClient {
	o := redis.ClusterOptions{}
	if opt != nil {
		o = *opt
	}
	o.Addrs = c.Addrs()
	cc := redis.NewClusterClient(&o)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func (c *Cluster) node(i int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.Nodes[i].Addr(), ReadTimeout: 10 * time.Second})
}

// Slot returns the hash slot of key, as Redis Cluster computes it (the
// part between the first braces when the key has a hash tag).
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % 16384)
}

// crc16 is the CRC16-CCITT (XMODEM) Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Owner returns the index of the node that serves slot, as the first
// running node sees it.
func (c *Cluster) Owner(ctx context.Context, slot int) (int, error) {
	n := c.node(c.live(0))
	defer n.Close()
	shards, err := n.ClusterShards(ctx).Result()
	if err != nil {
		return 0, err
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int(r.Start) > slot || slot > int(r.End) {
				continue
			}
			for _, nd := range sh.Nodes {
				for i, id := range c.ids {
					if nd.Role == "master" && nd.ID == id {
						return i, nil
					}
				}
			}
		}
	}
	return 0, fmt.Errorf("no node serves slot %d", slot)
}

// SlotMove is one slot being moved from node From to node To by the steps
// redis-cli --cluster reshard takes: Begin marks the slot importing on
// the target and migrating on the source, Migrate moves keys with
// MIGRATE, Finish assigns the slot to the target on every node.
type SlotMove struct {
	c        *Cluster
	Slot     int
	From, To int
}

// NewSlotMove prepares moving slot from its owner to node to.
func (c *Cluster) NewSlotMove(ctx context.Context, slot, to int) (*SlotMove, error) {
	from, err := c.Owner(ctx, slot)
	if err != nil {
		return nil, err
	}
	if from == to {
		return nil, fmt.Errorf("slot %d is already on node %d", slot, to)
	}
	return &SlotMove{c: c, Slot: slot, From: from, To: to}, nil
}

func (m *SlotMove) do(ctx context.Context, node int, args ...any) error {
	n := m.c.node(node)
	defer n.Close()
	return n.Do(ctx, args...).Err()
}

// Begin marks the slot importing on the target, then migrating on the
// source.
func (m *SlotMove) Begin(ctx context.Context) error {
	if err := m.do(ctx, m.To, "CLUSTER", "SETSLOT", m.Slot, "IMPORTING", m.c.ids[m.From]); err != nil {
		return fmt.Errorf("setslot importing: %w", err)
	}
	if err := m.do(ctx, m.From, "CLUSTER", "SETSLOT", m.Slot, "MIGRATING", m.c.ids[m.To]); err != nil {
		return fmt.Errorf("setslot migrating: %w", err)
	}
	return nil
}

// Keys lists the slot's keys still on the source.
func (m *SlotMove) Keys(ctx context.Context) ([]string, error) {
	n := m.c.node(m.From)
	defer n.Close()
	return n.ClusterGetKeysInSlot(ctx, m.Slot, 100000).Result()
}

// Migrate moves keys from the source to the target in one MIGRATE,
// without REPLACE: a key that already exists on the target fails the move
// with BUSYKEY, as it fails redis-cli's reshard.
func (m *SlotMove) Migrate(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	to := m.c.Nodes[m.To]
	args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", 0, 10000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	if err := m.do(ctx, m.From, args...); err != nil {
		return fmt.Errorf("migrate %d keys: %w", len(keys), err)
	}
	return nil
}

// MigrateAll moves the slot's remaining keys, batch keys per MIGRATE
// (redis-cli's --cluster-pipeline, 10 by default).
func (m *SlotMove) MigrateAll(ctx context.Context, batch int) (int, error) {
	moved := 0
	for {
		keys, err := m.Keys(ctx)
		if err != nil || len(keys) == 0 {
			return moved, err
		}
		keys = keys[:min(batch, len(keys))]
		if err := m.Migrate(ctx, keys...); err != nil {
			return moved, err
		}
		moved += len(keys)
	}
}

// Finish assigns the slot to the target: on the target first, then the
// source, then the other running masters, as redis-cli does (replicas
// refuse SETSLOT and follow their masters).
func (m *SlotMove) Finish(ctx context.Context) error {
	masters, err := m.c.Masters(ctx)
	if err != nil {
		return err
	}
	order := []int{m.To, m.From}
	for _, i := range masters {
		if i != m.To && i != m.From && m.c.Nodes[i].Running() {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if err := m.do(ctx, i, "CLUSTER", "SETSLOT", m.Slot, "NODE", m.c.ids[m.To]); err != nil {
			return fmt.Errorf("setslot node on node %d: %w", i, err)
		}
	}
	return nil
}

// Run makes the whole move and returns how many keys it migrated.
func (m *SlotMove) Run(ctx context.Context) (int, error) {
	if err := m.Begin(ctx); err != nil {
		return 0, err
	}
	n, err := m.MigrateAll(ctx, 10)
	if err != nil {
		return n, err
	}
	return n, m.Finish(ctx)
}

// OpenSlots returns, per node that has any, the slots it still marks
// migrating or importing (CLUSTER NODES shows them in brackets): a
// reshard that did not complete.
func (c *Cluster) OpenSlots(ctx context.Context) ([]string, error) {
	var out []string
	for i := range c.Nodes {
		if !c.Nodes[i].Running() {
			continue
		}
		n := c.node(i)
		s, err := n.ClusterNodes(ctx).Result()
		_ = n.Close()
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "myself") && strings.Contains(line, "[") {
				out = append(out, fmt.Sprintf("node %d: %s", i, line[strings.Index(line, "["):]))
			}
		}
	}
	return out, nil
}
