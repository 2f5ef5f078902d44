//go:build integration

package dashboard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// The real backings, pointed at a server that is not there: every page
// is a 503 with Retry-After, not a 500.
func TestUnreachableBackingsAre503(t *testing.T) {
	backings := map[string]func(t *testing.T) (contract.WorkQueue, contract.Inspector){
		"redis": func(t *testing.T) (contract.WorkQueue, contract.Inspector) {
			client := redis.NewClient(&redis.Options{Addr: closedPort(t), MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
			t.Cleanup(func() { _ = client.Close() })
			q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: "adkdash-unreachable",
				RetryBudget: redisstore.RetryBudget{Attempts: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			return q, q
		},
		"postgresql": func(t *testing.T) (contract.WorkQueue, contract.Inspector) {
			cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable&connect_timeout=1", closedPort(t)))
			if err != nil {
				t.Fatal(err)
			}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			q, err := pgstore.NewQueue(pool, nil, pgstore.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			return q, q
		},
	}
	for name, open := range backings {
		t.Run(name, func(t *testing.T) {
			q, insp := open(t)
			srv := newTestServer(t, Config{Queue: q, Inspector: insp, Backing: name, DefaultQueue: contract.DefaultQueue})
			for _, path := range []string{"/", "/tenants", "/leases", "/dead", "/api/tenants", "/api/dead", "/item?tenant=a&id=b"} {
				rec := srv.get(t, path)
				if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
					t.Errorf("%s: %d (Retry-After %q), want 503\n%.300s", path, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
				}
			}
		})
	}
}
