//go:build integration

package pgstore_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

const pgBin = "/usr/lib/postgresql/15/bin"

// ownServer is a PostgreSQL instance of the test's own, on a free
// loopback port in a temporary directory, which the test may stop and
// start (the shared server is never touched).
type ownServer struct {
	t    *testing.T
	dir  string
	port int
}

func (s *ownServer) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&statement_timeout=30s", s.port)
}

func (s *ownServer) pgCtl(args ...string) {
	s.t.Helper()
	full := append([]string{"-u", "postgres", "--", filepath.Join(pgBin, "pg_ctl"), "-D", filepath.Join(s.dir, "data")}, args...)
	if out, err := exec.Command("runuser", full...).CombinedOutput(); err != nil {
		s.t.Fatalf("pg_ctl %v: %v\n%s", args, err, out)
	}
}

func (s *ownServer) start() {
	s.t.Helper()
	s.pgCtl("-w", "-l", filepath.Join(s.dir, "log"), "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, s.dir), "start")
}

func (s *ownServer) stop() {
	s.t.Helper()
	s.pgCtl("-w", "-m", "fast", "stop")
}

func startOwnServer(t *testing.T) *ownServer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		t.Fatalf("this test starts its own PostgreSQL and needs %s (apt-get install postgresql-15): %v", pgBin, err)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("this test runs PostgreSQL as the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "adk-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatalf("chown %s to postgres (run the integration lane as root): %v", dir, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if out, err := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(pgBin, "initdb"),
		"-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s := &ownServer{t: t, dir: dir, port: port}
	s.start()
	t.Cleanup(func() {
		_ = exec.Command("runuser", "-u", "postgres", "--", filepath.Join(pgBin, "pg_ctl"), "-D", filepath.Join(dir, "data"), "-m", "immediate", "stop").Run()
	})
	return s
}

// A server restart: the listener backs off while the server is down,
// reconnects when it is back, LISTENs again and sends a synthetic wake;
// the queue reports the outage as a retryable error and works after it.
func TestServerRestart(t *testing.T) {
	s := startOwnServer(t)
	ctx := ctxT(t, 2*time.Minute)
	cfg, err := pgxpool.ParseConfig(s.dsn())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	lcfg, err := pgx.ParseConfig(s.dsn())
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.NewListener(lcfg, pgstore.ListenerSettings{ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	q, err := pgstore.OpenWorkQueue(ctx, pool, nil, pgstore.Settings{Listener: l})
	if err != nil {
		t.Fatal(err)
	}
	// LISTEN first: a subscriber that comes before its channel is LISTENed
	// gets a wake of its own once it is, and this test counts wakes.
	if err := l.Listen(ctx, pgstore.NotifyChannel(pgstore.StateTables{})); err != nil {
		t.Fatal(err)
	}
	wake, stop := q.Subscribe("")
	defer stop()
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "before"}); err != nil {
		t.Fatal(err)
	}
	<-wake

	s.stop()
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Connected {
		if time.Now().After(deadline) {
			t.Fatal("the listener still reports a connection to a stopped server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
	var unavailable *contract.QueueUnavailableError
	if !errors.As(err, &unavailable) || !contract.Retryable(err) {
		t.Errorf("Claim while the server is down: %v, want a retryable *QueueUnavailableError", err)
	}
	time.Sleep(time.Second) // several failed attempts, backing off
	select {
	case <-wake:
		t.Fatal("a wake while the server was down")
	default:
	}
	s.start()

	select {
	case <-wake:
	case <-time.After(15 * time.Second):
		t.Fatalf("no synthetic wake after the server came back; listener %+v", l.Stats())
	}
	if st := l.Stats(); st.Reconnects != 1 || !st.Connected {
		t.Errorf("listener after the restart: %+v, want one reconnect", st)
	}
	// Claim again until the pool has replaced its dead connections; the
	// item enqueued before the restart is still there (it was committed).
	var ls []contract.Lease
	for i := 0; ; i++ {
		ls, err = q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 1})
		if err == nil || !contract.Retryable(err) || i == 10 {
			break
		}
	}
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "before" {
		t.Fatalf("claim after the restart: %v, %v", ls, err)
	}
	// The channel is LISTENed again.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "after"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake for an enqueue after the restart")
	}
}
