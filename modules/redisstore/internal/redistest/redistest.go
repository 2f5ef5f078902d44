// Package redistest starts and cleans up the Redis servers the module's
// integration tests use: the shared server named by ADK_TEST_REDIS_URL,
// private redis-server processes configured each way, and a three-master
// Redis Cluster.
package redistest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvURL names the variable holding the shared test server's URL.
const EnvURL = "ADK_TEST_REDIS_URL"

// URL returns the shared test server's URL, failing the test when the
// variable is not set.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Fatal("set " + EnvURL + " (e.g. redis://127.0.0.1:6379/0) to run the Redis integration tests")
	}
	return u
}

// Client returns a client of the shared test server, closed at cleanup.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(URL(t))
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Namespace returns a namespace no other test uses and deletes every key
// under it when the test ends.
func Namespace(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	ns := "adktest-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { DeleteNamespace(t, c, ns) })
	return ns
}

// DeleteNamespace removes the keys of namespace ns, failing the test on
// error.
func DeleteNamespace(t testing.TB, c redis.UniversalClient, ns string) {
	t.Helper()
	if err := Purge(context.Background(), c, ns); err != nil {
		t.Errorf("cleaning namespace %s: %v", ns, err)
	}
}

// Purge removes the keys of namespace ns (state and queue keys), scanning
// every master of a cluster.
func Purge(ctx context.Context, c redis.UniversalClient, ns string) error {
	for _, pattern := range []string{ns + ":state:*", "{" + ns + ":queue}:*"} {
		err := forEachNode(ctx, c, func(ctx context.Context, node redis.Cmdable) error {
			return deletePattern(ctx, node, pattern)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Keys returns every key under namespace ns.
func Keys(ctx context.Context, c redis.UniversalClient, ns string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	for _, pattern := range []string{ns + ":state:*", "{" + ns + ":queue}:*"} {
		err := forEachNode(ctx, c, func(ctx context.Context, node redis.Cmdable) error {
			it := node.Scan(ctx, 0, pattern, 1000).Iterator()
			for it.Next(ctx) {
				mu.Lock()
				out = append(out, it.Val())
				mu.Unlock()
			}
			return it.Err()
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(context.Context, redis.Cmdable) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n) })
	}
	return fn(ctx, c)
}

// deletePattern deletes the keys matching pattern, quoting the glob
// characters a key prefix may hold.
func deletePattern(ctx context.Context, c redis.Cmdable, pattern string) error {
	pattern = strings.NewReplacer("[", `\[`, "]", `\]`, "?", `\?`).Replace(pattern)
	it := c.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 500 {
			if err := unlink(ctx, c, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return unlink(ctx, c, batch)
}

func unlink(ctx context.Context, c redis.Cmdable, keys []string) error {
	// Keys of one namespace may span slots (state keys tag the tenant), so
	// delete one at a time through a pipeline rather than in one UNLINK.
	if len(keys) == 0 {
		return nil
	}
	pipe := c.Pipeline()
	for _, k := range keys {
		pipe.Unlink(ctx, k)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is a redis-server process this test started.
type Server struct {
	t    testing.TB
	Port int
	Dir  string
	args []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// StartServer starts redis-server on a free loopback port in a temporary
// directory with the given extra arguments (e.g. "--maxmemory-policy",
// "allkeys-lru"), waits until it answers, and stops it at cleanup.
// Without arguments that say otherwise it runs with persistence off.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH; install it (apt-get install redis-server) to run these tests")
	}
	s := &Server{t: t, Port: FreePort(t), Dir: t.TempDir(), args: args}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start (re)starts the process on the same port, directory and arguments.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	all := append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log")}, s.args...)
	cmd := exec.Command("redis-server", all...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			fmt.Fprint(c, "PING\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return
			}
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			s.cmd = nil
			s.t.Fatalf("redis-server exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer within 10s", s.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the process (SIGKILL: nothing is flushed that was not
// already) and waits for it to exit.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Client returns a client of this server, closed at cleanup.
func (s *Server) Client(t testing.TB, opt *redis.Options) *redis.Client {
	if opt == nil {
		opt = &redis.Options{}
	}
	opt.Addr = s.Addr()
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Cluster is a Redis Cluster of masters this test started.
type Cluster struct {
	Nodes []*Server
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// StartCluster starts n masters with cluster mode on, joins them with
// redis-cli --cluster create, waits for cluster_state:ok, and tears it
// all down at cleanup.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli is not on PATH; install redis-tools to run the cluster tests")
	}
	cl := &Cluster{}
	for range n {
		cl.Nodes = append(cl.Nodes, StartServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000"))
	}
	args := append([]string{"--cluster", "create"}, cl.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
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
			time.Sleep(100 * time.Millisecond)
		}
		_ = c.Close()
	}
	return cl
}

// Client returns a cluster client, closed at cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
