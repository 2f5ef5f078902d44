package backing

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/sqlitestore"
)

// Names of the backings, as [Backing.Name] and contract.Health.Backing
// spell them.
const (
	Memory     = "memory"
	Redis      = "redis"
	PostgreSQL = "postgresql"
	SQLite     = "sqlite"
)

// Config says which backing to open and how. The zero Config opens the
// in-memory store.
type Config struct {
	// RedisDSN selects Redis: redis://[user:password@]host:port/db (or
	// rediss:// for TLS).
	RedisDSN contract.Secret
	// PostgresDSN selects PostgreSQL: a URL or keyword/value connection
	// string. A statement_timeout of 30s is added when it sets none,
	// because pgstore refuses connections whose statements may run
	// forever.
	PostgresDSN contract.Secret
	// SQLitePath selects SQLite: the path of the file (created, with its
	// schema, when missing). It is a path, not a secret.
	SQLitePath string

	// RedisNamespace is redisstore.Settings.Namespace (default "adk").
	RedisNamespace string
	// RedisCluster reads RedisDSN as a Redis Cluster URL (go-redis's
	// ParseClusterURL: redis://[user:password@]host:port?addr=host2:port
	// &addr=host3:port, any of the masters) and opens a cluster client.
	RedisCluster bool
	// RedisShards is redisstore.Settings.Shards: the deployment's shards
	// per queue (0 or 1: none). A tool must use the deployment's number,
	// or it reads keys no queue writes.
	RedisShards int
	// RedisVolatile and RedisAssumeDurable are the redisstore settings of
	// the same names: they change the preflight verdict, so set them as
	// the deployment does or the verdict is not the deployment's.
	RedisVolatile      bool
	RedisAssumeDurable bool

	// Tables are the PostgreSQL table names (zero fields: the defaults).
	Tables pgstore.StateTables
	// ApplySchema applies pgstore's schema for Tables before verifying:
	// for development databases only (the library itself never does).
	ApplySchema bool
	// Listen starts a PostgreSQL LISTEN connection outside the pool, so
	// the queue's claimers are woken rather than polling. Processes that
	// claim want it; a command that only inspects does not. When it
	// cannot start, Open warns and goes on: polling is slower, not wrong.
	Listen bool

	// Runs is every backing's Settings.Runs: how the state store treats
	// fences and versions of runs. A tool reading a deployment's runs
	// (adkctl runs, the dashboard) must use the deployment's policy: a
	// store shows no version past its own KeepVersions and VersionAge.
	Runs contract.RunPolicy

	// Clock is handed to every store; nil means the system clock.
	Clock contract.Clock
	// Warn receives problems Open works around (a LISTEN connection that
	// would not start). nil discards them. Messages never hold a secret.
	Warn func(msg string)
}

// Validate refuses a Config that names two backings or asks for a
// schema without PostgreSQL, saying which setting to change.
func (c Config) Validate() error {
	if c.RedisDSN.IsSet() && c.PostgresDSN.IsSet() {
		return errors.New("both a Redis and a PostgreSQL DSN are set; pick one backing (unset ADK_REDIS_DSN or ADK_POSTGRES_DSN, or drop --redis or --postgres)")
	}
	if c.SQLitePath != "" && (c.RedisDSN.IsSet() || c.PostgresDSN.IsSet()) {
		return errors.New("a SQLite path and a server DSN are both set; pick one backing (unset ADK_SQLITE_PATH, or ADK_REDIS_DSN / ADK_POSTGRES_DSN)")
	}
	if c.RedisCluster && !c.RedisDSN.IsSet() {
		return errors.New("--redis-cluster needs a Redis DSN (--redis or ADK_REDIS_DSN)")
	}
	if err := contract.ValidateRunPolicy("Runs", c.Runs); err != nil {
		return err
	}
	if c.ApplySchema && !c.PostgresDSN.IsSet() {
		return errors.New("--apply-schema needs a PostgreSQL DSN (--postgres or ADK_POSTGRES_DSN)")
	}
	return nil
}

// Kind is the name of the backing the Config selects: Memory, Redis,
// PostgreSQL or SQLite.
func (c Config) Kind() string {
	switch {
	case c.SQLitePath != "":
		return SQLite
	case c.RedisDSN.IsSet():
		return Redis
	case c.PostgresDSN.IsSet():
		return PostgreSQL
	}
	return Memory
}

// Backing is an opened backing: the queue, its inspector and the state
// store over one connection, and the verdict of the server's checks.
// Close it to let go of every connection it opened.
type Backing struct {
	// Name is Memory, Redis, PostgreSQL or SQLite.
	Name string
	// DSN is the DSN it was opened with ("" for memory), for showing
	// which server is in use; it prints as [redacted].
	DSN contract.Secret
	// Queue, Inspector and State are the backing's work queue, its
	// read-only snapshots (the same value as Queue) and its run state
	// store, over one client or pool.
	Queue     contract.WorkQueue
	Inspector contract.Inspector
	State     contract.StateStore
	// Verdict is why the server is unfit for the kit, nil when it passed:
	// redisstore.Preflight's refusal for Redis, pgstore.Verify's for
	// PostgreSQL. Open does not refuse on it, so that a tool can still
	// show a misconfigured server (Inspector.Health reports the same
	// checks with their fixes); a process that runs work should.
	Verdict error

	closers []func() error
}

// Close releases everything Open opened, last opened first. It is safe on
// a nil or zero Backing and idempotent.
func (b *Backing) Close() error {
	if b == nil {
		return nil
	}
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

func (b *Backing) onClose(f func() error) { b.closers = append(b.closers, f) }

// Open connects to the backing c selects, runs the server's checks
// (Preflight on Redis, Verify on PostgreSQL; their verdict lands in
// Backing.Verdict) and builds the stores. A server that cannot be reached
// is an error naming the host and the cause, never the DSN or password;
// on error nothing stays open.
func Open(ctx context.Context, c Config) (*Backing, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Kind() {
	case Redis:
		return openRedis(ctx, c)
	case PostgreSQL:
		return openPostgres(ctx, c)
	case SQLite:
		return openSQLite(ctx, c)
	}
	s := memstore.New(c.Clock, memstore.Settings{Runs: c.Runs})
	return &Backing{Name: Memory, Queue: s, Inspector: s, State: s}, nil
}

func openRedis(ctx context.Context, c Config) (*Backing, error) {
	dsn := c.RedisDSN
	var client redis.UniversalClient
	if c.RedisCluster {
		opts, err := redis.ParseClusterURL(dsn.Reveal())
		if err != nil {
			return nil, fmt.Errorf("the Redis Cluster DSN does not parse (want redis://[user:password@]host:port?addr=host2:port&addr=host3:port): %s", Redact(err.Error(), dsn))
		}
		client = redis.NewClusterClient(opts)
	} else {
		opts, err := redis.ParseURL(dsn.Reveal())
		if err != nil {
			return nil, fmt.Errorf("the Redis DSN does not parse (want redis://[user:password@]host:port/db): %s", Redact(err.Error(), dsn))
		}
		client = redis.NewClient(opts)
	}
	b := &Backing{Name: Redis, DSN: dsn}
	b.onClose(client.Close)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %s (check the DSN and that the server is up)", hostOf(dsn), Redact(err.Error(), dsn))
	}
	settings := redisstore.Settings{DSN: dsn, Namespace: c.RedisNamespace, Volatile: c.RedisVolatile, AssumeDurable: c.RedisAssumeDurable,
		Shards: c.RedisShards, Runs: c.Runs}
	// The server answered, so a failed preflight is a verdict on it
	// (settings, or CONFIG hidden from this user), not a reason to fail.
	if _, err := redisstore.Preflight(ctx, client, settings); err != nil {
		b.Verdict = scrubbed(err, dsn)
	}
	st, q, err := redisstore.New(client, c.Clock, settings)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.onClose(q.Close)
	b.Queue, b.Inspector, b.State = q, q, st
	return b, nil
}

func openPostgres(ctx context.Context, c Config) (*Backing, error) {
	dsn := c.PostgresDSN
	schema, err := pgstore.Schema(c.Tables)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn.Reveal())
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL DSN does not parse (want postgres://user[:password]@host:port/db or host=... dbname=...): %s", Redact(err.Error(), dsn))
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !ok {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30000"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot open PostgreSQL at %s: %s", hostOf(dsn), Redact(err.Error(), dsn))
	}
	b := &Backing{Name: PostgreSQL, DSN: dsn}
	b.onClose(func() error { pool.Close(); return nil })
	if err := pool.Ping(ctx); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s: %s (check the DSN and that the server is up)", hostOf(dsn), Redact(err.Error(), dsn))
	}
	if c.ApplySchema {
		// One simple-protocol round trip: the statements run as one
		// transaction, so a failure applies none of them.
		if _, err := pool.Exec(ctx, schema); err != nil {
			_ = b.Close()
			return nil, fmt.Errorf("apply the schema: %s", Redact(err.Error(), dsn))
		}
	}
	if err := pgstore.Verify(ctx, pool, c.Tables); err != nil {
		b.Verdict = scrubbed(err, dsn)
	}
	settings := pgstore.Settings{DSN: dsn, Tables: c.Tables, Runs: c.Runs}
	if c.Listen {
		l, err := startListener(ctx, cfg.ConnConfig, pgstore.NotifyChannel(c.Tables))
		if err != nil {
			c.warn("no LISTEN connection, the queue polls instead: " + Redact(err.Error(), dsn))
		} else {
			settings.Listener = l
			b.onClose(l.Close)
		}
	}
	st, q, err := pgstore.New(pool, c.Clock, settings)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Queue, b.Inspector, b.State = q, q, st
	return b, nil
}

// openSQLite opens the file (creating it, with its schema, when it is
// new). A file whose schema or connection settings Prepare refuses is
// still opened for showing, with the refusal as the verdict.
func openSQLite(ctx context.Context, c Config) (*Backing, error) {
	settings := sqlitestore.Settings{Runs: c.Runs}
	db, err := sqlitestore.OpenDB(c.SQLitePath, settings)
	if err != nil {
		return nil, fmt.Errorf("cannot open the SQLite file %s: %w", c.SQLitePath, err)
	}
	b := &Backing{Name: SQLite}
	b.onClose(db.Close)
	if err := db.PingContext(ctx); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("cannot open the SQLite file %s: %w (check the path and that its directory is writable)", c.SQLitePath, err)
	}
	if err := sqlitestore.Prepare(ctx, db, settings); err != nil {
		_, schema := errors.AsType[*contract.SchemaError](err)
		_, preflight := errors.AsType[*contract.PreflightError](err)
		if !schema && !preflight {
			_ = b.Close()
			return nil, fmt.Errorf("prepare the SQLite file %s: %w", c.SQLitePath, err)
		}
		b.Verdict = err
	}
	st, q, err := sqlitestore.New(db, c.Clock, settings)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.Queue, b.Inspector, b.State = q, q, st
	return b, nil
}

func startListener(ctx context.Context, cfg *pgx.ConnConfig, channel string) (*pgstore.Listener, error) {
	l, err := pgstore.NewListener(cfg, pgstore.ListenerSettings{})
	if err != nil {
		return nil, err
	}
	if err := l.Start(ctx); err != nil {
		_ = l.Close()
		return nil, err
	}
	if err := l.Listen(ctx, channel); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

func (c Config) warn(msg string) {
	if c.Warn != nil {
		c.Warn(msg)
	}
}
