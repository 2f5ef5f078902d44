package servers

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

// Redis is a redis-server process started by a test. Kill and Start
// restart it on the same port and directory, so an append-only file
// written before the kill is replayed.
type Redis struct {
	t    testing.TB
	Port int
	Dir  string
	args []string
	// conf, when set, is a configuration file passed first (Sentinel
	// needs one it can rewrite).
	conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server on a free loopback port in a temporary
// directory with the extra arguments (e.g. "--appendonly", "yes"), waits
// until it answers PING, and kills it when the test ends.
func StartRedis(t testing.TB, args ...string) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH; install redis-server to run the fault suite")
	}
	r := &Redis{t: t, Port: FreePort(t), Dir: t.TempDir(), args: args}
	r.Start()
	t.Cleanup(r.Kill)
	return r
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// Start (re)starts the process and waits until it has loaded its data and
// answers PING.
func (r *Redis) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	var all []string
	if r.conf != "" {
		all = append(all, r.conf)
	}
	all = append(all, []string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--dir", r.Dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(r.Dir, "redis.log")}...)
	all = append(all, r.args...)
	cmd := exec.Command("redis-server", all...)
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.cmd = cmd
	r.done = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(r.done)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if pong(r.Addr()) {
			return
		}
		select {
		case <-r.done:
			log, _ := os.ReadFile(filepath.Join(r.Dir, "redis.log"))
			r.cmd = nil
			r.t.Fatalf("redis-server exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer within 15s", r.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pong reports whether the server at addr answers PING with PONG (a
// server still loading its AOF answers -LOADING instead).
func pong(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprint(c, "PING\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "+PONG")
}

// Kill sends SIGKILL, so nothing is flushed that was not already, and
// waits for the process to exit.
func (r *Redis) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// Client returns a client of this server, closed when the test ends.
func (r *Redis) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Namespace returns a key namespace no other test uses on the server c
// talks to, and deletes every key under it when the test ends.
func Namespace(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	ns := "adkint-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := PurgeNamespace(ctx, c, ns); err != nil {
			t.Errorf("cleaning namespace %s: %v", ns, err)
		}
	})
	return ns
}

// NamespaceKeys lists the keys of namespace ns (state and queue keys).
func NamespaceKeys(ctx context.Context, c redis.UniversalClient, ns string) ([]string, error) {
	var out []string
	for _, pattern := range []string{ns + ":state:*", "{" + ns + ":queue}:*"} {
		it := c.Scan(ctx, 0, globQuote(pattern), 1000).Iterator()
		for it.Next(ctx) {
			out = append(out, it.Val())
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PurgeNamespace deletes the keys of namespace ns.
func PurgeNamespace(ctx context.Context, c redis.UniversalClient, ns string) error {
	keys, err := NamespaceKeys(ctx, c, ns)
	if err != nil || len(keys) == 0 {
		return err
	}
	pipe := c.Pipeline()
	for _, k := range keys {
		pipe.Unlink(ctx, k)
	}
	_, err = pipe.Exec(ctx)
	return err
}

// globQuote escapes the glob characters a namespace prefix may hold, so
// SCAN matches it literally (the braces of the hash tag are not special).
func globQuote(p string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`, "?", `\?`).Replace(p)
}
