package redistest

import (
	"bufio"
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

// Server is a redis-server process a test started. Kill and Start
// restart it on the same port, directory and settings, so an append-only
// file written before the kill is replayed.
type Server struct {
	Port int
	Dir  string

	t    testing.TB
	args []string
	// conf, when set, is a configuration file passed first (a Sentinel
	// needs one it can rewrite).
	conf string
	// bus, when set, is the node's cluster bus port: chosen as the port
	// is (port+10000, the default, may be taken or past 65535), and
	// chosen again with it when either is taken at the first start.
	bus int

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	started bool // it has run once: its port is known to others from then on
}

// StartServer starts redis-server on a free loopback port in a temporary
// directory with the given extra arguments (e.g. "--appendonly", "yes",
// "--appendfsync", "always"), waits until it answers PING, and kills it
// when the test ends. Without arguments that say otherwise it keeps no
// snapshot and no append-only file.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	s := newServer(t, append([]string{"--appendonly", "no"}, args...))
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

func newServer(t testing.TB, args []string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not on PATH; install it (apt-get install redis-server) to run these tests")
	}
	return &Server{t: t, Port: FreePort(t), Dir: t.TempDir(), args: args}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Start (re)starts the process and waits until it has loaded its data and
// answers PING. It does nothing while the process runs.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	// A free port can be taken again before the server binds it (by
	// another test process, or as a client's source port). Before the
	// server's first start it then moves to another port; and it counts
	// as up only once the process answering on its port is its own.
	for try := 1; ; try++ {
		log, up := s.startOnce()
		if up {
			break
		}
		if s.started || try == 3 || !strings.Contains(log, "in use") {
			s.t.Fatalf("redis-server exited at start: %s", log)
		}
		s.Port = FreePort(s.t)
		if s.bus != 0 {
			s.bus = FreePort(s.t)
		}
	}
	s.started = true
}

// startOnce runs the process and waits until it answers on its port: it
// reports whether it did, or else the log of a process that exited.
func (s *Server) startOnce() (log string, up bool) {
	var all []string
	if s.conf != "" {
		all = append(all, s.conf)
	}
	if s.bus != 0 {
		all = append(all, "--cluster-port", strconv.Itoa(s.bus))
	}
	all = append(all, "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"))
	all = append(all, s.args...)
	cmd := exec.Command("redis-server", all...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	const limit = 15 * time.Second // replaying a large append-only file takes a while
	deadline := time.Now().Add(limit)
	for serverPID(s.Addr()) != cmd.Process.Pid {
		select {
		case <-s.done:
			b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			s.cmd = nil
			return string(b), false
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer within %v", s.Addr(), limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", true
}

// serverPID is the process_id the server at addr reports (INFO server)
// once it answers PING with PONG, or 0: a server still loading its
// append-only file answers -LOADING, one that is not there nothing. Both
// go on one connection.
func serverPID(addr string) int {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprint(c, "PING\r\nINFO server\r\n")
	r := bufio.NewReader(c)
	if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "+PONG") {
		return 0
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0
		}
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ := strconv.Atoi(strings.TrimSpace(v))
			return pid
		}
	}
}

// Kill sends SIGKILL, so nothing is flushed that was not already, and
// waits for the process to exit. It does nothing when the process is not
// running.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Client returns a client of this server with the options opt (nil for
// go-redis's defaults; its Addr is set here), closed when the test ends.
func (s *Server) Client(t testing.TB, opt *redis.Options) *redis.Client {
	o := redis.Options{}
	if opt != nil {
		o = *opt
	}
	o.Addr = s.Addr()
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the process runs (it was started and not
// killed since).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}
