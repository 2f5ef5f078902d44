package pgstoretest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is a PostgreSQL cluster of a test's own: initdb'd into a
// temporary directory, run on a free loopback port with its socket in the
// same directory, trusting local connections as postgres. When the tests
// run as root it belongs to, and runs as, the postgres user.
type Server struct {
	Port int
	Dir  string

	bin      string
	settings []string
	asUser   bool // run the binaries through runuser as postgres

	mu      sync.Mutex
	running bool
}

// StartServer creates and starts a cluster for one test and removes it
// when the test ends. Each of settings is a server setting "name=value"
// (e.g. "fsync=off", "max_connections=50"), passed as -c at every start.
func StartServer(t testing.TB, settings ...string) *Server {
	t.Helper()
	s, err := NewServer(settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Remove)
	return s
}

// NewServer creates and starts a cluster the caller removes with
// [Server.Remove]: for one server shared by a package's tests (started in
// TestMain or on first use). settings are as for [StartServer].
func NewServer(settings ...string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, _, _, err := postgresDir("adk-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin, settings: settings, asUser: os.Geteuid() == 0}
	if s.Port, err = freePort(); err != nil {
		s.Remove()
		return nil, err
	}
	if out, err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		s.Remove()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := s.Start(); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

func (s *Server) run(bin string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, bin)
	cmd := exec.Command(path, args...)
	if s.asUser {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	cmd.Dir = s.Dir
	return cmd.CombinedOutput()
}

// DSN is the connection string of the cluster's postgres database as the
// postgres user, plus params, each "name=value" (e.g.
// "statement_timeout=30s").
func (s *Server) DSN(params ...string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), Path: "/postgres"}
	u.RawQuery = strings.Join(append([]string{"sslmode=disable"}, params...), "&")
	return u.String()
}

// Start starts the server (again) and waits until it accepts
// connections; after [Server.StopImmediate] it runs crash recovery first.
// It does nothing while the server runs.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	opts := []string{"-c listen_addresses=127.0.0.1", "-p " + strconv.Itoa(s.Port), "-k " + s.Dir, "-c max_connections=200"}
	for _, kv := range s.settings {
		opts = append(opts, "-c "+kv)
	}
	log := filepath.Join(s.Dir, "server.log")
	out, err := s.run("pg_ctl", "-D", s.data(), "-o", strings.Join(opts, " "), "-l", log, "-w", "-t", "60", "start")
	if err != nil {
		tail, _ := os.ReadFile(log)
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, tail)
	}
	s.running = true
	return nil
}

// Stop shuts the server down cleanly (pg_ctl -m fast: sessions are cut,
// a checkpoint is written).
func (s *Server) Stop() error { return s.stop("fast") }

// StopImmediate stops the server the way a crash would: no checkpoint,
// no clean shutdown; the next Start replays the WAL.
func (s *Server) StopImmediate() error { return s.stop("immediate") }

func (s *Server) stop(mode string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	if out, err := s.run("pg_ctl", "-D", s.data(), "-m", mode, "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
	s.running = false
	return nil
}

// Remove stops the server and deletes its directory.
func (s *Server) Remove() {
	_ = s.StopImmediate()
	_ = os.RemoveAll(s.Dir)
}

// binDir finds the PostgreSQL server binaries: the directory of initdb on
// PATH, else the newest /usr/lib/postgresql/<version>/bin (Debian keeps
// them off PATH).
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	if len(found) == 0 {
		return "", fmt.Errorf("the PostgreSQL server binaries (initdb, pg_ctl) are not on PATH nor in /usr/lib/postgresql/*/bin: apt-get install postgresql")
	}
	return filepath.Dir(found[0]), nil
}

// version is the major version in a /usr/lib/postgresql/<version>/bin path.
func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// postgresDir makes a temporary directory for a server that refuses to
// run as root (PostgreSQL, PgBouncer): run as root, the postgres user
// owns it, and its ids are returned; otherwise it is the caller's and the
// ids are -1.
func postgresDir(prefix string) (dir string, uid, gid int, err error) {
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", 0, 0, err
	}
	if os.Geteuid() != 0 {
		return dir, -1, -1, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		os.RemoveAll(dir)
		return "", 0, 0, fmt.Errorf("run as root, the servers that refuse root run as the postgres user, which is missing: %w", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		os.RemoveAll(dir)
		return "", 0, 0, fmt.Errorf("chown %s to postgres: %w", dir, err)
	}
	return dir, uid, gid, nil
}
