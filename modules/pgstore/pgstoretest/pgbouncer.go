package pgstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is a private PgBouncer in front of a PostgreSQL server: its
// own ini, auth file, log and pid file in a temporary directory (owned by,
// and run as, the postgres user when the tests run as root: PgBouncer
// refuses root), listening on a free loopback port, stopped and removed
// when the test ends.
type PgBouncer struct {
	Port int
	Dir  string
	// AdminUser may run the admin console's commands (RECONNECT, SHOW ...).
	AdminUser string

	t      testing.TB
	cmd    *exec.Cmd
	done   chan error
	dbname string
}

// PgBouncerConfig is what a test asks of its PgBouncer.
type PgBouncerConfig struct {
	// PoolMode is pool_mode: "transaction" when empty.
	PoolMode string
	// PoolSize is default_pool_size, the server connections per database
	// and user: 8 when zero.
	PoolSize int
	// Users are the roles clients log in as, with their passwords (the
	// auth file; PgBouncer logs in to the server with the same password).
	Users map[string]string
	// Extra lines for the [pgbouncer] section, e.g.
	// "ignore_startup_parameters": "extra_float_digits".
	Extra map[string]string
}

// PgBouncerBin finds the pgbouncer binary (Debian puts it in /usr/sbin).
func PgBouncerBin() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", fmt.Errorf("pgbouncer not found on PATH or in /usr/sbin: apt-get install pgbouncer")
}

// StartPgBouncer starts a PgBouncer that serves the database of
// upstreamDSN (a PostgreSQL server, e.g. ADK_TEST_POSTGRES_DSN) under the
// same name, and stops it when the test ends.
func StartPgBouncer(t testing.TB, upstreamDSN string, c PgBouncerConfig) *PgBouncer {
	t.Helper()
	bin, err := PgBouncerBin()
	if err != nil {
		t.Fatal(err)
	}
	up, err := pgx.ParseConfig(upstreamDSN)
	if err != nil {
		t.Fatalf("parse the upstream DSN: %v", err)
	}
	dir, uid, gid, err := postgresDir("adk-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	b := &PgBouncer{Port: port, Dir: dir, AdminUser: "adk_pgbouncer_admin", t: t, dbname: up.Database, done: make(chan error, 1)}

	if c.PoolMode == "" {
		c.PoolMode = "transaction"
	}
	if c.PoolSize == 0 {
		c.PoolSize = 8
	}
	var auth strings.Builder
	users := map[string]string{b.AdminUser: ""}
	for name, pw := range c.Users {
		users[name] = pw
	}
	for _, name := range sortedKeys(users) {
		fmt.Fprintf(&auth, "%q %q\n", name, users[name])
	}
	settings := map[string]string{
		"listen_addr":       "127.0.0.1",
		"listen_port":       strconv.Itoa(port),
		"unix_socket_dir":   "",
		"auth_type":         "trust",
		"auth_file":         filepath.Join(dir, "userlist.txt"),
		"admin_users":       b.AdminUser,
		"pool_mode":         c.PoolMode,
		"default_pool_size": strconv.Itoa(c.PoolSize),
		"max_client_conn":   "500",
		"logfile":           filepath.Join(dir, "pgbouncer.log"),
		"pidfile":           filepath.Join(dir, "pgbouncer.pid"),
	}
	for k, v := range c.Extra {
		settings[k] = v
	}
	var ini strings.Builder
	fmt.Fprintf(&ini, "[databases]\n%s = host=%s port=%d dbname=%s\n\n[pgbouncer]\n", up.Database, up.Host, up.Port, up.Database)
	for _, k := range sortedKeys(settings) {
		fmt.Fprintf(&ini, "%s = %s\n", k, settings[k])
	}
	for name, body := range map[string]string{"userlist.txt": auth.String(), "pgbouncer.ini": ini.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "userlist.txt"), filepath.Join(dir, "pgbouncer.ini")} {
		if uid < 0 {
			break
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatalf("chown %s to postgres: %v", p, err)
		}
	}

	b.cmd = exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	b.cmd.Dir = dir
	if uid >= 0 {
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	t.Cleanup(b.stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-b.done:
			b.done <- err
			t.Fatalf("pgbouncer exited at start (%v):\n%s", err, b.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer did not listen on %d within 10s:\n%s", port, b.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DSN is a client's connection string through PgBouncer to the upstream
// database as role; extra holds more query parameters (e.g.
// "default_query_exec_mode=exec").
func (b *PgBouncer) DSN(role, password string, extra ...string) string {
	u := url.URL{Scheme: "postgres", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)), Path: "/" + b.dbname}
	if password != "" {
		u.User = url.UserPassword(role, password)
	} else {
		u.User = url.User(role)
	}
	u.RawQuery = strings.Join(append([]string{"sslmode=disable", "connect_timeout=5"}, extra...), "&")
	return u.String()
}

// Admin runs a command in PgBouncer's admin console (e.g. "RECONNECT",
// "SHOW SERVERS") and returns its rows, each as text by column name.
func (b *PgBouncer) Admin(ctx context.Context, command string) ([]map[string]string, error) {
	u := url.URL{Scheme: "postgres", User: url.User(b.AdminUser), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)), Path: "/pgbouncer",
		RawQuery: "sslmode=disable&default_query_exec_mode=simple_protocol"}
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("pgbouncer admin console: %w", err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, command)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer %s: %w", command, err)
	}
	defer rows.Close()
	var out []map[string]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row := map[string]string{}
		for i, f := range rows.FieldDescriptions() {
			row[f.Name] = fmt.Sprint(vals[i])
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// Log is PgBouncer's log so far, for failure messages.
func (b *PgBouncer) Log() string {
	out, _ := os.ReadFile(filepath.Join(b.Dir, "pgbouncer.log"))
	return string(out)
}

func (b *PgBouncer) stop() {
	if b.cmd.Process == nil {
		return
	}
	// SIGTERM is PgBouncer's immediate shutdown: clients are cut, which
	// is all a test that is over needs.
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

// Role is a throwaway login role with a schema of its own on a shared
// server. Behind a transaction pooler the connection's settings cannot
// travel as startup parameters (PgBouncer refuses them), so the role
// carries them: search_path is the schema, plus whatever Settings says.
type Role struct {
	Name, Password, Schema string
	adminDSN               string
}

// NewRole creates the role and its schema on the server at adminDSN
// (ALTER ROLE ... SET for each of settings, search_path included) and
// drops both when the test ends. Register it before the PgBouncer that
// serves it, so that PgBouncer stops first and its server connections
// are gone when the role is dropped.
func NewRole(t testing.TB, adminDSN string, settings map[string]string) *Role {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	name := "adk_pgb_" + hex.EncodeToString(raw[:])
	_, _ = rand.Read(raw[:])
	r := &Role{Name: name, Password: hex.EncodeToString(raw[:]), Schema: name, adminDSN: adminDSN}
	c, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer c.Close(ctx)
	id := pgx.Identifier{name}.Sanitize()
	stmts := []string{
		"CREATE ROLE " + id + " LOGIN PASSWORD '" + r.Password + "'",
		"CREATE SCHEMA " + id + " AUTHORIZATION " + id,
		"ALTER ROLE " + id + " SET search_path = " + id,
	}
	t.Cleanup(func() { r.drop(t) })
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for k, v := range settings {
		if err := r.Set(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// Set runs ALTER ROLE ... SET name = value (RESET when value is empty).
// Server connections opened before keep their old value: behind
// PgBouncer, RECONNECT replaces them.
func (r *Role) Set(ctx context.Context, name, value string) error {
	c, err := pgx.Connect(ctx, r.adminDSN)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	q := "ALTER ROLE " + pgx.Identifier{r.Name}.Sanitize() + " RESET " + pgx.Identifier{name}.Sanitize()
	if value != "" {
		q = "ALTER ROLE " + pgx.Identifier{r.Name}.Sanitize() + " SET " + pgx.Identifier{name}.Sanitize() + " = '" + strings.ReplaceAll(value, "'", "''") + "'"
	}
	if _, err := c.Exec(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

// Exec runs sql as the role, in its schema, on a direct connection of
// the admin's (so the objects it creates are the role's).
func (r *Role) Exec(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, r.adminDSN)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	id := pgx.Identifier{r.Name}.Sanitize()
	if _, err := c.Exec(ctx, "SET ROLE "+id+"; SET search_path TO "+id); err != nil {
		return err
	}
	_, err = c.Exec(ctx, sql)
	return err
}

func (r *Role) drop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, r.adminDSN)
	if err != nil {
		t.Errorf("drop role %s: %v", r.Name, err)
		return
	}
	defer c.Close(ctx)
	id := pgx.Identifier{r.Name}.Sanitize()
	// Sessions of the role that outlived the test (a listener's, say) would
	// hold the drop back.
	_, _ = c.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", r.Name)
	for _, s := range []string{"DROP SCHEMA IF EXISTS " + id + " CASCADE", "DROP ROLE IF EXISTS " + id} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
