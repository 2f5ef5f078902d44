//go:build integration

package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// Health reads the server-wide autovacuum switch as well as the table's
// reloptions: with autovacuum off the settings check is red and says how
// to turn it on, and the dead-ratio check blames that rather than long
// transactions. The test runs its own server, the only kind whose
// postgresql.conf a test may change.
func TestHealthAutovacuumOff(t *testing.T) {
	s := pgstoretest.StartServer(t, "fsync=off")
	ctx := ctxT(t, time.Minute)
	conn, err := pgx.Connect(ctx, s.DSN("statement_timeout=30s"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		t.Fatal(err)
	}
	q, err := pgstore.NewQueue(conn, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string) contract.HealthCheck {
		t.Helper()
		h, err := q.Health(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range h.Checks {
			if c.Name == "adk_work "+name {
				return c
			}
		}
		t.Fatalf("no %q check in %+v", name, h.Checks)
		return contract.HealthCheck{}
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if c := check("autovacuum settings"); c.Status != contract.HealthOK {
		t.Fatalf("settings on a default server: %+v", c)
	}

	exec("ALTER SYSTEM SET autovacuum = off")
	exec("SELECT pg_reload_conf()")
	// Settings reach a backend at its next command once the postmaster
	// has signalled it; SHOW answers as soon as this backend has it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var v string
		if err := conn.QueryRow(ctx, "SHOW autovacuum").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == "off" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not take autovacuum = off")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := check("autovacuum settings")
	if c.Status != contract.HealthFail || !strings.Contains(c.Value, "autovacuum = off") || !strings.Contains(c.Fix, "autovacuum = on") {
		t.Errorf("with autovacuum off the settings check is %+v; want red, naming the switch and the fix", c)
	}

	// Dead tuples with nothing to clean them: the ratio check points at
	// the switch, not at long transactions.
	var items []contract.Item
	for i := range 200 {
		items = append(items, contract.Item{Tenant: "acme", ID: strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	for {
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 100})
		if err != nil {
			break
		}
		if err := q.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	// This backend's table statistics reach the shared view once it
	// flushes them, which it does before its next idle wait.
	exec("SELECT pg_stat_force_next_flush()")
	r := check("dead ratio")
	if r.Status == contract.HealthOK {
		t.Fatalf("dead ratio after deleting every row with autovacuum off: %+v", r)
	}
	if !strings.Contains(r.Fix, "autovacuum does not run") || strings.Contains(r.Fix, "long-running") {
		t.Errorf("dead ratio fix %q; want it to name the switch, not long transactions", r.Fix)
	}

	exec("ALTER SYSTEM RESET autovacuum")
	exec("SELECT pg_reload_conf()")
	exec("ALTER TABLE adk_work SET (autovacuum_enabled = false)")
	c = check("autovacuum settings")
	if c.Status != contract.HealthFail || !strings.Contains(c.Fix, "RESET (autovacuum_enabled)") {
		t.Errorf("with autovacuum_enabled=false the settings check is %+v", c)
	}
}
