//go:build integration

package pgstoretest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// What a private server commits before a crash is there after it, and
// a clean stop and start keep it too.
func TestServerStopsAndStarts(t *testing.T) {
	s := pgstoretest.StartServer(t, "fsync=off")
	ctx := context.Background()
	count := func(sql string) int {
		t.Helper()
		c, err := pgx.Connect(ctx, s.DSN("statement_timeout=30s"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var n int
		if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	create, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create.Exec(ctx, "CREATE TABLE t AS SELECT 1 AS n"); err != nil {
		t.Fatal(err)
	}
	create.Close(ctx)
	for _, stop := range []func() error{s.StopImmediate, s.Stop} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if c, err := pgx.Connect(ctx, s.DSN("connect_timeout=1")); err == nil {
			c.Close(ctx)
			t.Fatal("a stopped server accepted a connection")
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		if n := count("SELECT count(*) FROM t"); n != 1 {
			t.Fatalf("%d rows after the restart, want 1", n)
		}
	}
}

// A server for a package's tests to share: NewServer, removed by the
// caller.
func ExampleNewServer() {
	s, err := pgstoretest.NewServer("fsync=off")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Remove()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	var user string
	if err := c.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(user)
	// Output: postgres
}
