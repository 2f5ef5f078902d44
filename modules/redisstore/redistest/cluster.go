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

// Cluster is a Redis Cluster of masters started by a test.
type Cluster struct {
	Nodes []*Server
	ids   []string
}

// StartCluster starts n masters with cluster mode on (persistence off
// unless args say otherwise), joins them with redis-cli --cluster create,
// waits until every node reports cluster_state:ok, and kills them all
// when the test ends.
func StartCluster(t testing.TB, n int, args ...string) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli is not on PATH; install redis-tools to run the cluster tests")
	}
	cl := &Cluster{}
	for range n {
		// The bus port is chosen too: port+10000, the default, may be
		// taken or past 65535.
		a := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(FreePort(t)), "--cluster-node-timeout", "5000"}, args...)
		cl.Nodes = append(cl.Nodes, StartServer(t, a...))
	}
	create := append([]string{"--cluster", "create"}, cl.Addrs()...)
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for _, node := range cl.Nodes {
		c := redis.NewClient(&redis.Options{Addr: node.Addr()})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				t.Fatalf("cluster node %s not ok after 30s: %v %s", node.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		cl.ids = append(cl.ids, id)
	}
	return cl
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

// Owner returns the index of the node that serves slot, as node 0 sees it.
func (c *Cluster) Owner(ctx context.Context, slot int) (int, error) {
	n := c.node(0)
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
// source, then the other nodes, as redis-cli does.
func (m *SlotMove) Finish(ctx context.Context) error {
	order := []int{m.To, m.From}
	for i := range m.c.Nodes {
		if i != m.To && i != m.From {
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
