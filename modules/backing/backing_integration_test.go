//go:build integration

package backing

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// redisNamespace returns the test Redis URL and a namespace of the test's
// own, whose keys are deleted afterwards.
func redisNamespace(t *testing.T) (contract.Secret, string) {
	t.Helper()
	return contract.Secret(redistest.URL(t)), redistest.Namespace(t, redistest.Client(t))
}

// postgresSchema returns a DSN whose connections use an empty schema of
// the test's own, dropped afterwards.
func postgresSchema(t *testing.T) contract.Secret {
	t.Helper()
	return contract.Secret(pgstoretest.TestSchema(t, pgstoretest.DSN(t), &pgstoretest.SchemaOptions{Bare: true}).DSN())
}

func TestOpenRedis(t *testing.T) {
	dsn, ns := redisNamespace(t)
	ctx := t.Context()
	b, err := Open(ctx, Config{RedisDSN: dsn, RedisNamespace: ns, RedisVolatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name != Redis || b.DSN != dsn {
		t.Fatalf("name %q", b.Name)
	}
	// The test server may or may not persist; with RedisVolatile it
	// passes either way.
	if b.Verdict != nil {
		t.Fatalf("verdict with RedisVolatile: %v", b.Verdict)
	}
	if err := b.Queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.State.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	info, err := b.Inspector.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "run-1"})
	if err != nil || info.Item.State != contract.StateQueued {
		t.Fatalf("item: %+v %v", info, err)
	}
	h, err := b.Inspector.Health(ctx)
	if err != nil || h.Details["namespace"] != ns {
		t.Fatalf("health: %+v %v", h, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// Preflight's refusal is the Verdict, typed, and the backing still opens
// so that a tool can show it.
func TestOpenRedisVerdict(t *testing.T) {
	dsn, ns := redisNamespace(t)
	ctx := t.Context()
	// A namespace with a character Settings refuses: the stores refuse,
	// so Open does, and nothing stays open (goleak checks).
	if _, err := Open(ctx, Config{RedisDSN: dsn, RedisNamespace: "bad ns"}); err == nil {
		t.Fatal("an invalid namespace was accepted")
	}
	b, err := Open(ctx, Config{RedisDSN: dsn, RedisNamespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := redis.NewClient(mustParse(t, dsn))
	defer c.Close()
	cfg, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	persists := cfg["appendonly"] == "yes" || cfg["save"] != ""
	evicts := strings.HasPrefix(cfg["maxmemory-policy"], "allkeys-") || cfg["maxmemory-policy"] == "volatile-ttl"
	if want := !persists || evicts; (b.Verdict != nil) != want {
		t.Fatalf("verdict %v on a server with appendonly=%q save=%q maxmemory-policy=%q", b.Verdict, cfg["appendonly"], cfg["save"], cfg["maxmemory-policy"])
	}
	if b.Verdict != nil {
		if _, ok := errors.AsType[*contract.PreflightError](b.Verdict); !ok {
			t.Fatalf("the verdict is not a *contract.PreflightError: %T %v", b.Verdict, b.Verdict)
		}
	}
}

func TestOpenPostgres(t *testing.T) {
	dsn := postgresSchema(t)
	ctx := t.Context()

	// An empty schema: the backing opens, with Verify's refusal as verdict.
	b, err := Open(ctx, Config{PostgresDSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	se, ok := errors.AsType[*contract.SchemaError](b.Verdict)
	if !ok || se.Object != "adk_schema" {
		t.Fatalf("verdict on an empty schema: %T %v", b.Verdict, b.Verdict)
	}
	h, err := b.Inspector.Health(ctx)
	if err != nil || h.Status() != contract.HealthFail {
		t.Fatalf("health on an empty schema: %+v %v", h, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// ApplySchema applies it, Verify passes, and with Listen the queue is
	// woken by its enqueues.
	var warnings []string
	b, err = Open(ctx, Config{PostgresDSN: dsn, ApplySchema: true, Listen: true, Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Verdict != nil || len(warnings) > 0 {
		t.Fatalf("verdict %v, warnings %q", b.Verdict, warnings)
	}
	wake, stop := b.Queue.(contract.Waker).Subscribe(contract.DefaultQueue)
	defer stop()
	if err := b.Queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-ctx.Done():
		t.Fatal("no wake from the LISTEN connection")
	}
	if _, err := b.State.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.Queue.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: 60e9, Max: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", ls, err)
	}
	stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// A DSN's own statement_timeout is kept; without one Open sets 30s, so
// Verify passes.
func TestOpenPostgresStatementTimeout(t *testing.T) {
	dsn := postgresSchema(t)
	u, _ := url.Parse(dsn.Reveal())
	q := u.Query()
	q.Set("statement_timeout", "0")
	u.RawQuery = q.Encode()
	b, err := Open(t.Context(), Config{PostgresDSN: contract.Secret(u.String()), ApplySchema: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pe, ok := errors.AsType[*contract.PreflightError](b.Verdict)
	if !ok || pe.Setting != "statement_timeout" {
		t.Fatalf("verdict with statement_timeout=0: %v", b.Verdict)
	}
}

func mustParse(t *testing.T, dsn contract.Secret) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(dsn.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestOpenRedisCluster opens a self-started 3-master cluster through a
// cluster URL naming all three masters: the queue and the state store
// work across its slots, and the DSN's password-free form is kept.
func TestOpenRedisCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	addrs := cl.Addrs()
	dsn := contract.Secret("redis://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2])
	ctx := t.Context()
	if _, err := Open(ctx, Config{RedisDSN: contract.Secret("redis://" + addrs[0] + "?dial_timeout=soon"), RedisCluster: true}); err == nil || !strings.Contains(err.Error(), "Cluster DSN does not parse") {
		t.Errorf("a bad cluster URL: %v", err)
	}
	b, err := Open(ctx, Config{RedisDSN: dsn, RedisCluster: true, RedisVolatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Verdict != nil {
		t.Fatalf("verdict: %v", b.Verdict)
	}
	for _, tenant := range []string{"acme", "globex", "initech"} {
		if err := b.Queue.Enqueue(ctx, contract.Item{Tenant: tenant, ID: "run-1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.State.PutRun(ctx, contract.Run{Tenant: tenant, ID: "run-1"}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := b.Queue.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 3 {
		t.Fatalf("claim on the cluster: %d, %v", len(ls), err)
	}
	if err := b.Queue.Complete(ctx, ls...); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Config{RedisCluster: true}); err == nil || !strings.Contains(err.Error(), "needs a Redis DSN") {
		t.Errorf("--redis-cluster without a DSN: %v", err)
	}
}
