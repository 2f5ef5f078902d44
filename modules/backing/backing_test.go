package backing

import (
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestOpenMemory(t *testing.T) {
	b, err := Open(t.Context(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name != Memory || b.Queue == nil || b.Inspector == nil || b.State == nil || b.Verdict != nil || b.DSN.IsSet() {
		t.Fatalf("memory backing: %+v", b)
	}
	if err := b.Queue.Enqueue(t.Context(), contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	ts, err := b.Inspector.Tenants(t.Context(), contract.DefaultQueue)
	if err != nil || len(ts) != 1 || ts[0].Ready != 1 {
		t.Fatalf("the inspector does not see the queue's item: %+v %v", ts, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal("a second Close failed:", err)
	}
	if err := (*Backing)(nil).Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{RedisDSN: "redis://x", PostgresDSN: "postgres://y"}, "pick one backing"},
		{Config{ApplySchema: true}, "--apply-schema needs a PostgreSQL DSN"},
		{Config{RedisDSN: "redis://x", ApplySchema: true}, "--apply-schema needs a PostgreSQL DSN"},
	} {
		err := tc.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v; want it to say %q", tc.c, err, tc.want)
		}
		if _, err := Open(t.Context(), tc.c); err == nil {
			t.Errorf("Open(%+v) accepted an invalid config", tc.c)
		}
	}
	if err := (Config{PostgresDSN: "postgres://y", ApplySchema: true}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{}, Memory},
		{Config{RedisDSN: "redis://x"}, Redis},
		{Config{PostgresDSN: "host=x"}, PostgreSQL},
		{Config{RedisNamespace: "a", Tables: tablesWork("w")}, Memory},
	} {
		if got := tc.c.Kind(); got != tc.want {
			t.Errorf("%+v.Kind() = %s, want %s", tc.c, got, tc.want)
		}
	}
}

// The flags win over the environment, and one DSN flag is enough even
// when the other backing's variable is exported.
func TestFlagsOverrideEnvironment(t *testing.T) {
	parse := func(args []string, getenv func(string) string) Config {
		t.Helper()
		var c Config
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c.FillFromEnv(getenv)
		return c
	}
	e := env(EnvRedisDSN, "redis://env:6379/0", EnvPostgresDSN, "")
	if c := parse(nil, e); c.RedisDSN.Reveal() != "redis://env:6379/0" || c.Kind() != Redis {
		t.Errorf("from the environment: %v", c.Kind())
	}
	if c := parse([]string{"--redis", "redis://flag:6379/1"}, e); c.RedisDSN.Reveal() != "redis://flag:6379/1" {
		t.Error("--redis did not override ADK_REDIS_DSN")
	}
	if c := parse([]string{"--postgres", "postgres://flag/db"}, e); c.Kind() != PostgreSQL || c.RedisDSN.IsSet() || c.Validate() != nil {
		t.Errorf("--postgres with ADK_REDIS_DSN exported: kind %s, validate %v", c.Kind(), c.Validate())
	}
	if c := parse(nil, env(EnvRedisDSN, "redis://a", EnvPostgresDSN, "postgres://b")); c.Validate() == nil {
		t.Error("two DSNs in the environment accepted")
	}
	c := parse([]string{"--redis-namespace", "ns", "--redis-volatile", "--redis-assume-durable", "--work-table", "w", "--runs-table", "r", "--turns-table", "tt", "--blobs-table", "bb"}, env())
	if c.RedisNamespace != "ns" || !c.RedisVolatile || !c.RedisAssumeDurable || c.Tables.Work != "w" || c.Tables.Runs != "r" || c.Tables.Turns != "tt" || c.Tables.Blobs != "bb" {
		t.Errorf("flags not stored: %+v", c)
	}
	if got := FromEnv(e); got.RedisDSN.Reveal() != "redis://env:6379/0" {
		t.Error("FromEnv ignored ADK_REDIS_DSN")
	}
}

// Malformed DSNs and unreachable servers are errors that name the problem
// and never the password.
func TestOpenErrorsNeverPrintThePassword(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{RedisDSN: "redis://user:pa55word@[bad"}, "the Redis DSN does not parse"},
		{Config{RedisDSN: "http://user:pa55word@host"}, "the Redis DSN does not parse"},
		{Config{PostgresDSN: "postgres://user:pa55word@host:notaport/db"}, "the PostgreSQL DSN does not parse"},
		// Port 1 on loopback refuses at once: nothing listens there.
		{Config{RedisDSN: "redis://user:pa55word@127.0.0.1:1/0"}, "cannot reach Redis at 127.0.0.1:1"},
		{Config{PostgresDSN: "postgres://user:pa55word@127.0.0.1:1/db?connect_timeout=2"}, "cannot reach PostgreSQL at 127.0.0.1:1"},
		{Config{PostgresDSN: "postgres://u@127.0.0.1/db", Tables: tablesWork("work; drop table x")}, "plain identifier"},
	} {
		b, err := Open(ctx, tc.c)
		if err == nil {
			b.Close()
			t.Errorf("Open(%s) succeeded", tc.c.Kind())
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open: %v; want it to say %q", err, tc.want)
		}
		if strings.Contains(err.Error(), "pa55word") {
			t.Errorf("Open printed the password: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	dsn := contract.Secret("postgres://u:s3cr3t@db.internal:5432/app")
	msg := Redact("failed: postgres://u:s3cr3t@db.internal:5432/app and again s3cr3t", dsn)
	if strings.Contains(msg, "s3cr3t") {
		t.Fatal(msg)
	}
	if kv := Redact("auth failed for password=hunter2", "host=db user=u password=hunter2"); strings.Contains(kv, "hunter2") {
		t.Error(kv)
	}
	if hostOf(dsn) != "db.internal:5432" || hostOf("host=x password=y") != "the configured server" {
		t.Errorf("hostOf: %q", hostOf(dsn))
	}
	refusal := &contract.SchemaError{Object: "adk_schema", Found: "missing"}
	if err := scrubbed(refusal, dsn); err != refusal {
		t.Error("an error without the secret was rewrapped")
	}
	err := scrubbed(wrapped{"at s3cr3t", refusal}, dsn)
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Error(err)
	}
	if _, ok := errors.AsType[*contract.SchemaError](err); !ok {
		t.Error("the scrubbed error lost its type")
	}
}

type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }

func tablesWork(name string) pgstore.StateTables { return pgstore.StateTables{Work: name} }

func TestRunsPolicyReachesTheStore(t *testing.T) {
	ctx := t.Context()
	b, err := Open(ctx, Config{Runs: contract.RunPolicy{KeepVersions: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 5 {
		if _, err := b.State.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "s", Version: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	rk, ok := contract.AsRunKeeper(b.State)
	if !ok {
		t.Fatal("no RunKeeper")
	}
	p, err := rk.ListRunVersions(ctx, "acme", "r", contract.PageRequest{})
	if err != nil || len(p.Versions) != 4 { // the run and the 3 kept before it
		t.Errorf("versions kept with Runs.KeepVersions 3: %d, %v; want the current run and 3 more", len(p.Versions), err)
	}
	if _, err := Open(ctx, Config{Runs: contract.RunPolicy{KeepVersions: -1}}); err == nil || !strings.Contains(err.Error(), "Runs.KeepVersions") {
		t.Errorf("a bad policy: %v, want it refused naming Runs.KeepVersions", err)
	}
}

func TestRunsFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--keep-versions", "7", "--version-age", "168h", "--require-fence", "--redis-cluster", "--redis-shards", "3"}); err != nil {
		t.Fatal(err)
	}
	if !c.RedisCluster || c.RedisShards != 3 {
		t.Errorf("--redis-cluster --redis-shards 3 gave %v, %d", c.RedisCluster, c.RedisShards)
	}
	if c.Runs != (contract.RunPolicy{KeepVersions: 7, VersionAge: 168 * time.Hour, RequireFence: true}) {
		t.Errorf("flags gave %+v", c.Runs)
	}
}
