package servers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/pgstore"
)

// PostgresBin is where the PostgreSQL 15 server binaries live.
const PostgresBin = "/usr/lib/postgresql/15/bin"

// Postgres is a private PostgreSQL cluster: initdb'd into a directory the
// postgres user owns, run as that user on a free loopback port with its
// socket in the same directory.
type Postgres struct {
	Port int
	Dir  string

	mu      sync.Mutex
	running bool
}

// StartPostgres creates and starts a cluster. The caller stops it with
// Remove (the fault suite shares one cluster between its tests).
func StartPostgres() (*Postgres, error) {
	if _, err := os.Stat(filepath.Join(PostgresBin, "initdb")); err != nil {
		return nil, fmt.Errorf("PostgreSQL server binaries not found in %s; install postgresql-15", PostgresBin)
	}
	dir, _, _, err := postgresDir("adk-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{Dir: dir}
	port, err := freePort()
	if err != nil {
		p.Remove()
		return nil, err
	}
	p.Port = port
	if out, err := p.asPostgres("initdb", "-D", p.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		p.Remove()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := p.Start(); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) data() string { return filepath.Join(p.Dir, "data") }

func (p *Postgres) asPostgres(bin string, args ...string) ([]byte, error) {
	all := append([]string{"-u", "postgres", "--", filepath.Join(PostgresBin, bin)}, args...)
	cmd := exec.Command("runuser", all...)
	cmd.Dir = p.Dir
	return cmd.CombinedOutput()
}

// DSN is the connection string of the cluster's postgres database.
func (p *Postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port)
}

// Start starts the server (again) and waits until it accepts connections.
// After a stop -m immediate this runs crash recovery first.
func (p *Postgres) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=200 -c fsync=on", p.Port, p.Dir)
	out, err := p.asPostgres("pg_ctl", "-D", p.data(), "-o", opts, "-l", filepath.Join(p.Dir, "server.log"), "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(p.Dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	p.running = true
	return nil
}

// StopImmediate stops the server the way a crash would: no checkpoint, no
// clean shutdown; the next Start replays the WAL.
func (p *Postgres) StopImmediate() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil
	}
	out, err := p.asPostgres("pg_ctl", "-D", p.data(), "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	p.running = false
	return nil
}

// Remove stops the server and deletes its directory.
func (p *Postgres) Remove() {
	_ = p.StopImmediate()
	_ = os.RemoveAll(p.Dir)
}

// Schema creates a schema on the server at dsn with a name no other test
// uses, applies pgstore.ExpectedSchema in it, and drops it when the test
// ends.
func Schema(t testing.TB, dsn string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	schema := "adk_int_" + hex.EncodeToString(raw[:])
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	if _, err := c.Exec(ctx, "SET search_path TO "+schema); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatalf("apply ExpectedSchema: %v", err)
	}
	return schema
}

// PoolConfig returns a pool configuration whose connections use schema
// and carry a statement timeout, as pgstore's Verify asks.
func PoolConfig(dsn, schema string, maxConns int32) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30s"
	cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	return cfg, nil
}
