// Package oracle is the fault suite's judge. It plans a load of items
// across tenants, runs workers in separate processes (the test binary
// started again in worker mode), and at the end reads the store to decide
// whether every item was done exactly once or dead-lettered and whether
// every run's counters equal the patches applied.
package oracle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/sqlitestore"
)

// Backing names.
const (
	Redis    = "redis"
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Target says which server and which isolated corner of it a store uses.
type Target struct {
	Backing   string `json:"backing"`
	Addr      string `json:"addr,omitempty"`      // Redis host:port
	Namespace string `json:"namespace,omitempty"` // Redis key namespace
	DSN       string `json:"dsn,omitempty"`       // PostgreSQL
	Schema    string `json:"schema,omitempty"`    // PostgreSQL search_path
	// Cluster, when set, are the seed addresses of a Redis Cluster (Addr
	// is then unused).
	Cluster []string `json:"cluster,omitempty"`
	// Sentinels and MasterName, when set, reach Redis through Sentinel
	// with go-redis's failover client (Addr is then unused).
	Sentinels  []string `json:"sentinels,omitempty"`
	MasterName string   `json:"master_name,omitempty"`
	// WaitReplicas is redisstore's Settings.WaitReplicas.
	WaitReplicas int `json:"wait_replicas,omitempty"`
	// Shards is redisstore's Settings.Shards (0: one).
	Shards int `json:"shards,omitempty"`
	// ClusterReload is go-redis's ClusterStateReloadInterval (0: its
	// default, 60s): a cluster client learns a promoted master only at a
	// reload, since a refused dial does not trigger one.
	ClusterReload time.Duration `json:"cluster_reload,omitempty"`
	// RetryBudget is redisstore's Settings.RetryBudget (zero: its default).
	RetryBudget redisstore.RetryBudget `json:"retry_budget,omitempty"`
	// RoleSettings (PostgreSQL): DSN reaches the server through a
	// transaction pooler, which refuses startup parameters, so the role
	// carries search_path and statement_timeout and none are sent.
	RoleSettings bool `json:"role_settings,omitempty"`
	// ListenDSN (PostgreSQL), when set, is where the listener connects
	// instead of DSN: PostgreSQL itself when DSN is a transaction pooler.
	ListenDSN string `json:"listen_dsn,omitempty"`
	// Path (SQLite) is the file every process of the load opens; the
	// test prepares its schema before the workers start.
	Path string `json:"path,omitempty"`
}

// OpenOptions tune the clients of one process.
type OpenOptions struct {
	Clock       contract.Clock
	Policy      policy.Policy
	PoolSize    int           // 0: the client's default
	PoolTimeout time.Duration // 0: the backing's default
	// NoClientRetries turns go-redis's own retries off (MaxRetries -1), so
	// the store's retry budget is the only one.
	NoClientRetries bool
	Listen          bool   // PostgreSQL: wake claimers with LISTEN/NOTIFY
	ListenerApp     string // application_name of the listener connection
}

// Stores are a state store and a queue on one target.
type Stores struct {
	State     contract.StateStore
	Queue     contract.WorkQueue
	Inspector contract.Inspector
	Listener  *pgstore.Listener
	// Pool is the PostgreSQL pool (nil on Redis).
	Pool *pgxpool.Pool
	// PGState and PGQueue are the PostgreSQL backings themselves, for
	// work bound to a transaction (nil on Redis).
	PGState *pgstore.PostgresStateStore
	PGQueue *pgstore.PostgresWorkQueue
	// SQL, SQLiteState and SQLiteQueue are the SQLite file and backings,
	// for work bound to a transaction (nil elsewhere).
	SQL         *sql.DB
	SQLiteState *sqlitestore.SQLiteStateStore
	SQLiteQueue *sqlitestore.SQLiteWorkQueue
	// Redis is the Redis client of a single server or of Sentinel's
	// master (nil on PostgreSQL and on a cluster).
	Redis *redis.Client
	// RedisAny is the Redis client whatever the topology (nil on
	// PostgreSQL).
	RedisAny redis.UniversalClient
	close    []func()
}

// Close releases the clients.
func (s *Stores) Close() {
	for i := len(s.close) - 1; i >= 0; i-- {
		s.close[i]()
	}
}

// Open builds the stores of a target without their preflight checks (the
// servers of the suite are configured by the tests themselves).
func Open(ctx context.Context, t Target, o OpenOptions) (*Stores, error) {
	if o.Clock == nil {
		o.Clock = contract.SystemClock{}
	}
	switch t.Backing {
	case Redis:
		opt := &redis.UniversalOptions{Addrs: []string{t.Addr}, DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second}
		if o.PoolSize > 0 {
			opt.PoolSize = o.PoolSize
		}
		if o.PoolTimeout > 0 {
			opt.PoolTimeout = o.PoolTimeout
		}
		if o.NoClientRetries {
			opt.MaxRetries = -1
		}
		var c redis.UniversalClient
		s := &Stores{}
		switch {
		case len(t.Cluster) > 0:
			opt.Addrs = t.Cluster
			co := opt.Cluster()
			co.ClusterStateReloadInterval = t.ClusterReload
			c = redis.NewClusterClient(co)
		case len(t.Sentinels) > 0:
			opt.Addrs, opt.MasterName = t.Sentinels, t.MasterName
			s.Redis = redis.NewFailoverClient(opt.Failover())
			c = s.Redis
		default:
			s.Redis = redis.NewClient(opt.Simple())
			c = s.Redis
		}
		s.RedisAny = c
		s.close = append(s.close, func() { _ = c.Close() })
		settings := redisstore.Settings{Namespace: t.Namespace, Policy: o.Policy, RetryBudget: t.RetryBudget, WaitReplicas: t.WaitReplicas, Shards: t.Shards}
		st, q, err := redisstore.New(c, o.Clock, settings)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.close = append(s.close, func() { _ = q.Close() })
		s.State, s.Queue, s.Inspector = st, q, q
		return s, nil
	case Postgres:
		cfg, err := pgxpool.ParseConfig(t.DSN)
		if err != nil {
			return nil, err
		}
		if !t.RoleSettings {
			cfg.ConnConfig.RuntimeParams["search_path"] = t.Schema
			cfg.ConnConfig.RuntimeParams["statement_timeout"] = "20s"
		}
		cfg.ConnConfig.ConnectTimeout = 2 * time.Second
		if o.PoolSize > 0 {
			cfg.MaxConns = int32(o.PoolSize)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s := &Stores{Pool: pool, close: []func(){pool.Close}}
		settings := pgstore.Settings{Policy: o.Policy, AcquireTimeout: o.PoolTimeout, PollInterval: 200 * time.Millisecond}
		if o.Listen {
			app := o.ListenerApp
			if app == "" {
				app = "adk-listener"
			}
			lcfg := cfg.ConnConfig.Copy()
			if t.ListenDSN != "" {
				if lcfg, err = pgx.ParseConfig(t.ListenDSN); err != nil {
					s.Close()
					return nil, err
				}
			}
			lcfg.RuntimeParams["application_name"] = app
			l, err := pgstore.NewListener(lcfg, pgstore.ListenerSettings{})
			if err != nil {
				s.Close()
				return nil, err
			}
			if err := l.Start(ctx); err != nil {
				s.Close()
				return nil, err
			}
			s.close = append(s.close, func() { _ = l.Close() })
			if err := l.Listen(ctx, pgstore.NotifyChannel(pgstore.StateTables{})); err != nil {
				s.Close()
				return nil, err
			}
			s.Listener, settings.Listener = l, l
		}
		st, q, err := pgstore.New(pool, o.Clock, settings)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.State, s.Queue, s.Inspector = st, q, q
		s.PGState, s.PGQueue = st, q
		return s, nil
	case SQLite:
		settings := sqlitestore.Settings{Policy: o.Policy, PollInterval: 200 * time.Millisecond}
		db, err := sqlitestore.OpenDB(t.Path, settings)
		if err != nil {
			return nil, err
		}
		s := &Stores{SQL: db, close: []func(){func() { _ = db.Close() }}}
		st, err := sqlitestore.NewState(db, o.Clock, settings)
		if err != nil {
			s.Close()
			return nil, err
		}
		q, err := sqlitestore.NewQueue(db, o.Clock, settings)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.State, s.Queue, s.Inspector = st, q, q
		s.SQLiteState, s.SQLiteQueue = st, q
		return s, nil
	}
	return nil, fmt.Errorf("oracle: unknown backing %q", t.Backing)
}

// errClass names the kind of a failed call for the workers' reports.
func errClass(err error) string {
	var (
		pool  *contract.PoolExhaustedError
		lost  *contract.LeaseLostError
		qu    *contract.QueueUnavailableError
		sp    *contract.StatePersistenceError
		inval *contract.ValidationError
	)
	switch {
	case errors.As(err, &pool):
		return "pool_exhausted"
	case errors.As(err, &lost):
		return "lease_lost"
	case errors.As(err, &qu):
		return "queue_unavailable"
	case errors.As(err, &sp):
		return "state_" + sp.Reason
	case errors.As(err, &inval):
		return "invalid"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "context"
	}
	return "other"
}
