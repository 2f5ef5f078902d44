package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/redis/go-redis/v9"
)

// clusterMasters is how many masters the cluster scenario starts, and the
// Shards its sharded side asks for: one shard per master.
const clusterMasters = 3

// clusterBusy is how many tenants share the cluster scenario's
// throughput load: enough for every shard to hold a third of them
// (tenants t00–t49 fall 16, 17 and 17 over three shards).
const clusterBusy = 50

// benchCluster is a Redis Cluster of masters the cluster scenario starts
// for itself on free loopback ports in a temporary directory, with
// persistence off, and kills when it is done. The shared Redis stays
// untouched; everything on these servers is the scenario's own.
type benchCluster struct {
	dir   string
	nodes []*clusterNode
}

// clusterNode is one redis-server process of a benchCluster and a plain
// client of it (for INFO, FLUSHALL and CLUSTER INFO).
type clusterNode struct {
	port   int
	cmd    *exec.Cmd
	done   chan struct{}
	client *redis.Client
}

func (n *clusterNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// freePorts returns n distinct loopback TCP ports nothing listens on at
// the moment: all n are held open until each is picked, so two of them
// cannot be the same port.
func freePorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// startBenchCluster starts n masters with cluster mode on, joins them
// with redis-cli --cluster create (no replicas, so each master gets one
// of n equal slot ranges, in the order of their addresses), and waits
// until every node reports cluster_state:ok and knows all n. On an error
// it stops whatever it had started.
func startBenchCluster(ctx context.Context, n int) (_ *benchCluster, err error) {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%s is not on PATH; install redis-server and redis-tools to run the cluster scenario", bin)
		}
	}
	dir, err := os.MkdirTemp("", "adkbench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &benchCluster{dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	for i := range n {
		if err := c.startNode(filepath.Join(dir, strconv.Itoa(i))); err != nil {
			return nil, err
		}
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, firstLine(out))
	}
	deadline := time.Now().Add(30 * time.Second)
	want := fmt.Sprintf("cluster_known_nodes:%d", n)
	for _, node := range c.nodes {
		for {
			info, err := node.client.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("cluster node %s not ok after 30s: %v %s", node.addr(), err, firstLine([]byte(info)))
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return c, nil
}

// startNode starts one cluster-enabled redis-server in dir, on other
// free ports when one exits at start (another process can take a free
// port before the server binds it).
func (c *benchCluster) startNode(dir string) error {
	var err error
	for range 3 {
		if err = c.startNodeOnce(dir); !errors.Is(err, errExited) {
			return err
		}
	}
	return err
}

// errExited is startNodeOnce's error for a server that exited at start.
var errExited = errors.New("exited at start")

// startNodeOnce starts one cluster-enabled redis-server in dir on a free
// port (its cluster bus on another free port: the default, port+10000,
// may be taken or past 65535), adds it to c.nodes once it answers PING
// (so stop kills it whatever happens next) and waits for that.
func (c *benchCluster) startNodeOnce(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	port, bus := ports[0], ports[1]
	cmd := exec.Command("redis-server",
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	node := &clusterNode{port: port, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(node.done) }()
	node.client = redis.NewClient(&redis.Options{Addr: node.addr(), ReadTimeout: 10 * time.Second})
	c.nodes = append(c.nodes, node)
	deadline := time.Now().Add(15 * time.Second)
	for node.client.Ping(context.Background()).Err() != nil {
		select {
		case <-node.done:
			c.nodes = c.nodes[:len(c.nodes)-1]
			_ = node.client.Close()
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			_ = os.Remove(filepath.Join(dir, "nodes.conf"))
			return fmt.Errorf("redis-server on port %d %w: %s", port, errExited, lastLine(log))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d did not answer within 15s", port)
		}
	}
	return nil
}

// addrs returns the nodes' host:port addresses.
func (c *benchCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr()
	}
	return out
}

// stop kills every node, waits for it to exit and removes the directory.
func (c *benchCluster) stop() {
	for _, n := range c.nodes {
		_ = n.client.Close()
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	c.nodes = nil
	_ = os.RemoveAll(c.dir)
}

// flush empties every node: the cluster is the scenario's own, and a
// measurement starts on empty servers.
func (c *benchCluster) flush(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := n.client.FlushAll(ctx).Err(); err != nil {
			return fmt.Errorf("flushall %s: %w", n.addr(), err)
		}
	}
	return nil
}

// cpu returns each node's CPU time so far (INFO cpu: used_cpu_sys plus
// used_cpu_user, every thread of the process), in node order.
func (c *benchCluster) cpu(ctx context.Context) ([]time.Duration, error) {
	out := make([]time.Duration, len(c.nodes))
	for i, n := range c.nodes {
		info, err := n.client.Info(ctx, "cpu").Result()
		if err != nil {
			return nil, err
		}
		out[i], err = infoCPU(info)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.addr(), err)
		}
	}
	return out, nil
}

// infoCPU is used_cpu_sys plus used_cpu_user of an INFO cpu reply.
func infoCPU(info string) (time.Duration, error) {
	var total float64
	seen := 0
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_sys" && name != "used_cpu_user") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s: %w", name, err)
		}
		total += f
		seen++
	}
	if seen != 2 {
		return 0, errors.New("INFO cpu has no used_cpu_sys and used_cpu_user")
	}
	return time.Duration(total * float64(time.Second)), nil
}

// scriptMicros sums every node's script time (see scriptMicros).
func (c *benchCluster) scriptMicros(ctx context.Context) (int64, error) {
	var total int64
	for _, n := range c.nodes {
		us, err := scriptMicros(ctx, n.client)
		if err != nil {
			return 0, err
		}
		total += us
	}
	return total, nil
}

// processCPU is this process's CPU time so far (user plus system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clusterBacking is a backing on the scenario's cluster whose rows note
// what the servers spent: around the workers' run (start to stop) it
// reads every node's CPU time and this process's, so a row can say which
// server threads were busy and how much of the two cores the client took.
type clusterBacking struct {
	backing
	cl *benchCluster

	t0      time.Time
	cpuAt   []time.Duration
	procAt  time.Duration
	window  time.Duration   // start → stop of the last measurement
	cpuUsed []time.Duration // each node's CPU time over the window
	proc    time.Duration   // this process's CPU time over the window
}

// clusterQueue opens redisstore over a cluster client of cl, with
// namespace ns and shards shards, for conc workers; closing it deletes
// nothing (the scenario flushes its servers).
func clusterQueue(cl *benchCluster, ns string, shards, conc int) (*instance, error) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.addrs(), PoolSize: conc + 20})
	q, err := redisstore.NewQueue(c, nil, redisstore.Settings{Namespace: ns, Shards: shards})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &instance{q: q, waker: q, serverMicros: cl.scriptMicros, close: func(ctx context.Context) error {
		err := q.Close()
		c.Close()
		return err
	}}, nil
}

// redisOnCluster is one redisstore queue on cl, drained by the runner as
// every row of ours is.
func redisOnCluster(label string, open func(ctx context.Context, conc int) (*instance, error), claimers, batch int) *ourBacking {
	return &ourBacking{
		label:    label,
		open:     open,
		poll:     500 * time.Millisecond,
		claimers: claimers,
		maxBatch: batch,
		chunk:    500,
		loaders:  2,
	}
}

// newClusterBacking is redisstore with Settings.Shards = shards on cl,
// under a namespace of its own per measurement, the servers flushed
// before and after.
func newClusterBacking(cl *benchCluster, shards, claimers, batch int) *clusterBacking {
	n := 0
	ob := redisOnCluster(fmt.Sprintf("redis-shards%d", shards), func(ctx context.Context, conc int) (*instance, error) {
		n++
		if err := cl.flush(ctx); err != nil {
			return nil, err
		}
		inst, err := clusterQueue(cl, fmt.Sprintf("adkbench_%d_%d", os.Getpid(), n), shards, conc)
		if err != nil {
			return nil, err
		}
		closeQueue := inst.close
		inst.close = func(ctx context.Context) error {
			return errors.Join(closeQueue(ctx), cl.flush(ctx))
		}
		return inst, nil
	}, claimers, batch)
	return &clusterBacking{backing: ob, cl: cl}
}

// namespacesBacking is the reference the issue's "shard by running
// several namespaces" stands for: one unsharded queue per master (each
// namespace's tag chosen in that master's slot range), a tenant's items
// in the queue of the shard redisstore would give it, and a runner per
// queue with its share of the workers. It has no rotation across the
// queues and no fairness between them: it shows what the servers give
// when nothing joins the queues.
type namespacesBacking struct {
	cl    *benchCluster
	parts []*ourBacking
	n     int
}

func newNamespacesBacking(cl *benchCluster, claimers, batch int) *clusterBacking {
	b := &namespacesBacking{cl: cl}
	for i := range len(cl.nodes) {
		b.parts = append(b.parts, redisOnCluster(fmt.Sprintf("ns%d", i), func(ctx context.Context, conc int) (*instance, error) {
			return clusterQueue(cl, namespaceOn(fmt.Sprintf("adkbench_%d_%d_", os.Getpid(), b.n), i, len(cl.nodes)), 1, conc)
		}, claimers, batch))
	}
	return &clusterBacking{backing: b, cl: cl}
}

// namespaceOn returns prefix followed by the smallest k whose queue tag
// ("<ns>:queue") falls in the i-th of n equal slot ranges: the range
// redis-cli --cluster create gives the i-th master.
func namespaceOn(prefix string, i, n int) string {
	lo, hi := i*16384/n, (i+1)*16384/n
	for k := 0; ; k++ {
		ns := prefix + strconv.Itoa(k)
		if s := int(crc16(ns+":queue") % 16384); s >= lo && s < hi {
			return ns
		}
	}
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

// fnvShard is redisstore's shard of a tenant: FNV-1a of its name modulo n.
func fnvShard(tenant string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(tenant); i++ {
		h ^= uint32(tenant[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

func (b *namespacesBacking) name() string      { return fmt.Sprintf("redis-%dns", len(b.parts)) }
func (b *namespacesBacking) peer() bool        { return false }
func (b *namespacesBacking) enqueueChunk() int { return 500 }
func (b *namespacesBacking) enqueuers() int    { return 2 }

func (b *namespacesBacking) prepare(ctx context.Context, w workload) error {
	b.n++
	if err := b.cl.flush(ctx); err != nil {
		return err
	}
	for i, p := range b.parts {
		pw := w
		pw.conc = w.conc / len(b.parts)
		if i < w.conc%len(b.parts) {
			pw.conc++
		}
		if err := p.prepare(ctx, pw); err != nil {
			return err
		}
	}
	return nil
}

func (b *namespacesBacking) enqueue(ctx context.Context, jobs []job) error {
	by := make([][]job, len(b.parts))
	for _, j := range jobs {
		i := fnvShard(tenantName(j.tenant), len(b.parts))
		by[i] = append(by[i], j)
	}
	for i, js := range by {
		if len(js) > 0 {
			if err := b.parts[i].enqueue(ctx, js); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *namespacesBacking) start(ctx context.Context) error {
	for _, p := range b.parts {
		if err := p.start(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (b *namespacesBacking) stop(ctx context.Context) error {
	var errs []error
	for _, p := range b.parts {
		errs = append(errs, p.stop(ctx))
	}
	return errors.Join(errs...)
}

func (b *namespacesBacking) cleanup(ctx context.Context) error {
	var errs []error
	for _, p := range b.parts {
		errs = append(errs, p.cleanup(ctx))
	}
	return errors.Join(append(errs, b.cl.flush(ctx))...)
}

func (b *namespacesBacking) errs() (int64, error) {
	var n int64
	var first error
	for _, p := range b.parts {
		k, err := p.errs()
		n += k
		if first == nil {
			first = err
		}
	}
	return n, first
}

func (b *namespacesBacking) detail() string {
	var out []string
	for _, p := range b.parts {
		if d := p.detail(); d != "" {
			out = append(out, p.label+": "+d)
		}
	}
	return strings.Join(out, " | ")
}

func (b *clusterBacking) start(ctx context.Context) error {
	b.cpuUsed, b.proc, b.window = nil, 0, 0
	at, err := b.cl.cpu(ctx)
	if err != nil {
		return fmt.Errorf("INFO cpu: %w", err)
	}
	b.cpuAt, b.procAt, b.t0 = at, processCPU(), time.Now()
	return b.backing.start(ctx)
}

func (b *clusterBacking) stop(ctx context.Context) error {
	err := b.backing.stop(ctx)
	b.window = time.Since(b.t0)
	b.proc = processCPU() - b.procAt
	now, cerr := b.cl.cpu(ctx)
	if cerr != nil {
		return errors.Join(err, fmt.Errorf("INFO cpu: %w", cerr))
	}
	b.cpuUsed = make([]time.Duration, len(now))
	for i := range now {
		b.cpuUsed[i] = now[i] - b.cpuAt[i]
	}
	return err
}

// cpuNote says what the last measurement's window cost each server and
// this process: CPU seconds and the share of one core over the window.
func (b *clusterBacking) cpuNote() string {
	if b.window <= 0 || len(b.cpuUsed) == 0 {
		return ""
	}
	share := func(d time.Duration) string {
		return fmt.Sprintf("%.2f s (%.0f%%)", d.Seconds(), 100*d.Seconds()/b.window.Seconds())
	}
	parts := make([]string, len(b.cpuUsed))
	var sum time.Duration
	for i, d := range b.cpuUsed {
		parts[i] = fmt.Sprintf("node%d %s", i, share(d))
		sum += d
	}
	return fmt.Sprintf("CPU over %.2f s: %s, servers %s, adkbench %s, of %d cores",
		b.window.Seconds(), strings.Join(parts, ", "), share(sum), share(b.proc), runtime.NumCPU())
}

// shardsUnsupported reports why this build's redisstore refuses
// Settings.Shards = n on a cluster client, "" when it accepts it.
func shardsUnsupported(cl *benchCluster, n int) string {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.addrs()})
	defer c.Close()
	q, err := redisstore.NewQueue(c, nil, redisstore.Settings{Namespace: "adkbench_probe", Shards: n})
	if err == nil {
		_ = q.Close()
		return ""
	}
	if ve, ok := errors.AsType[*contract.ValidationError](err); ok && ve.Field == "Settings.Shards" {
		return ve.Error()
	}
	return err.Error()
}

// clusterScenario starts a 3-master cluster and measures, on it, the
// throughput load of 50 busy tenants with one shard (the whole queue in
// one slot: one master's thread) against three shards (one per master),
// beside three unsharded namespaces, one per master (the reference: what
// three threads give with nothing joining them), in rounds whose order
// alternates, at the largest -concurrency; then the fairness load (one
// tenant with -items items, 50 with 10 each) with one and three shards,
// at the first -concurrency. Every row notes each server's CPU time over
// the workers' run.
func (h *harness) clusterScenario(ctx context.Context) {
	conc := slices.Max(h.cfg.conc)
	h.logf("cluster: starting %d masters", clusterMasters)
	cl, err := startBenchCluster(ctx, clusterMasters)
	if err != nil {
		h.add(row{Scenario: "cluster", Backing: "redis-cluster", Concurrency: conc, Metric: "claim→complete", Unit: "items/s", Error: err.Error()})
		h.logf("  cluster: %v", err)
		return
	}
	defer cl.stop()
	one := newClusterBacking(cl, 1, h.cfg.claimers, h.cfg.batch)
	many := newClusterBacking(cl, clusterMasters, h.cfg.claimers, h.cfg.batch)
	spaces := newNamespacesBacking(cl, h.cfg.claimers, h.cfg.batch)
	for _, b := range []*clusterBacking{one, many} {
		b.backing.(*ourBacking).carry = h.cfg.completeAndClaim
	}
	for _, p := range spaces.backing.(*namespacesBacking).parts {
		p.carry = h.cfg.completeAndClaim
	}
	unsupported := shardsUnsupported(cl, clusterMasters)

	// The sides of a round, in the order of even rounds; odd rounds
	// reverse it.
	sides := []*clusterBacking{one, many, spaces}
	if unsupported != "" {
		sides = []*clusterBacking{one, spaces}
	}
	measured := make([][]row, len(sides))
	ratios := make([][]float64, len(sides)) // each side over one shard, per round
	for p := range max(1, h.cfg.pairs) {
		round := make([]row, len(sides))
		for k := range sides {
			i := k
			if p%2 == 1 {
				i = len(sides) - 1 - k
			}
			b := sides[i]
			r := h.measureThroughput(ctx, "cluster", b, conc, h.cfg.items, clusterBusy, 0)
			r.Note = strings.TrimSpace(b.cpuNote() + "; " + fmt.Sprintf("%d tenants", clusterBusy))
			round[i] = r
		}
		for i, r := range round {
			measured[i] = append(measured[i], r)
			if base := round[0]; i > 0 && r.Error == "" && base.Error == "" && base.Value > 0 {
				ratios[i] = append(ratios[i], r.Value/base.Value)
			}
		}
	}
	for i, b := range sides {
		r := medianRow(measured[i])
		if i > 0 && r.Error == "" && len(ratios[i]) == len(measured[i]) {
			shown := make([]string, len(ratios[i]))
			for k, x := range ratios[i] {
				shown[k] = fmt.Sprintf("%.2f", x)
			}
			rs := slices.Clone(ratios[i])
			slices.SortFunc(rs, cmp.Compare[float64])
			r.Ratio, r.RatioOf = rs[len(rs)/2], "vs 1 shard"
			r.Note = fmt.Sprintf("ratios %s; %s", strings.Join(shown, ", "), r.Note)
			if b == many {
				r.Target, r.Met = "≥ 1.8× 1 shard", ptr(r.Ratio >= 1.8)
			} else {
				r.Note = "reference, no rotation across the queues; " + r.Note
			}
		}
		h.add(r)
		if b == one && unsupported != "" {
			h.add(row{Scenario: "cluster", Backing: many.name(), Concurrency: conc, Items: h.cfg.items, Metric: "claim→complete", Unit: "items/s",
				Note: "not supported: " + unsupported})
		}
	}

	c0 := h.cfg.conc[0]
	fr := h.fairnessRow(ctx, "cluster", one, c0, 60)
	fr.Target, fr.Met = "≤ 60", ptr(fr.Value > 0 && fr.Value <= 60)
	fr.Note += "; " + one.cpuNote()
	h.add(fr)
	if unsupported != "" {
		h.add(row{Scenario: "cluster", Backing: many.name(), Concurrency: c0, Metric: "max first-claim index", Unit: "claims",
			Note: "not supported: " + unsupported})
		return
	}
	// Within a shard the rotation is exact; across shards a claim takes
	// from each in turn, so a small tenant may wait up to a round of
	// every shard: twice the 51 tenants at most.
	bound := 2 * 51
	fr = h.fairnessRow(ctx, "cluster", many, c0, bound)
	fr.Target, fr.Met = fmt.Sprintf("≤ %d", bound), ptr(fr.Value > 0 && fr.Value <= float64(bound))
	fr.Note += "; " + many.cpuNote()
	h.add(fr)
}

// lastLine is the last non-empty line of a log: where a server says why
// it stopped.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
