package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
)

// backing is an opened store: what the dashboard reads and acts on, and
// how to let go of it.
type backing struct {
	name      string
	dsn       contract.Secret
	queue     contract.WorkQueue
	inspector contract.Inspector
	state     contract.StateStore
	close     func()
}

func openBacking(ctx context.Context, o options) (*backing, error) {
	switch {
	case o.redisDSN.IsSet():
		return openRedis(ctx, o)
	case o.postgresDSN.IsSet():
		return openPostgres(ctx, o)
	default:
		s := memstore.New(nil)
		return &backing{name: "memory", queue: s, inspector: s, state: s, close: func() {}}, nil
	}
}

func openRedis(ctx context.Context, o options) (*backing, error) {
	opts, err := redis.ParseURL(o.redisDSN.Reveal())
	if err != nil {
		return nil, fmt.Errorf("the Redis DSN does not parse (want redis://[user:password@]host:port/db): %s", redact(err.Error(), o.redisDSN))
	}
	client := redis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %s", hostOf(o.redisDSN), redact(err.Error(), o.redisDSN))
	}
	settings := redisstore.Settings{DSN: o.redisDSN, Namespace: o.namespace}
	// NewQueue, not OpenQueue: a dashboard must open to show a server that
	// fails preflight; the health page carries the verdict and the fix.
	q, err := redisstore.NewQueue(client, nil, settings)
	if err != nil {
		client.Close()
		return nil, err
	}
	st, err := redisstore.NewState(client, nil, settings)
	if err != nil {
		client.Close()
		return nil, err
	}
	return &backing{name: "redis", dsn: o.redisDSN, queue: q, inspector: q, state: st, close: func() {
		_ = q.Close()
		_ = client.Close()
	}}, nil
}

func openPostgres(ctx context.Context, o options) (*backing, error) {
	cfg, err := pgxpool.ParseConfig(o.postgresDSN.Reveal())
	if err != nil {
		return nil, fmt.Errorf("the PostgreSQL DSN does not parse: %s", redact(err.Error(), o.postgresDSN))
	}
	// pgstore refuses a connection that lets a statement run forever; a
	// DSN that sets its own statement_timeout keeps it.
	if _, ok := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !ok {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = "30000"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot open PostgreSQL at %s: %s", hostOf(o.postgresDSN), redact(err.Error(), o.postgresDSN))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s: %s", hostOf(o.postgresDSN), redact(err.Error(), o.postgresDSN))
	}
	if o.applySchema {
		if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
			pool.Close()
			return nil, fmt.Errorf("apply schema: %s", redact(err.Error(), o.postgresDSN))
		}
	}
	settings := pgstore.Settings{DSN: o.postgresDSN}
	// A LISTEN connection outside the pool wakes the demo's workers and
	// puts the listener's health on the health page. Without it the queue
	// polls, which is slower but correct, so a failure here only warns.
	listener, lerr := startListener(ctx, cfg.ConnConfig)
	if lerr != nil {
		fmt.Fprintf(o.stderr, "adk-dashboard: warning: no LISTEN connection, the queue polls instead: %s\n", redact(lerr.Error(), o.postgresDSN))
	} else {
		settings.Listener = listener
	}
	closeAll := func() {
		if listener != nil {
			_ = listener.Close()
		}
		pool.Close()
	}
	q, err := pgstore.OpenWorkQueue(ctx, pool, nil, settings)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%s (on a development database, --apply-schema applies it)", redact(err.Error(), o.postgresDSN))
	}
	st, err := pgstore.NewStateStore(pool, nil, settings)
	if err != nil {
		closeAll()
		return nil, err
	}
	return &backing{name: "postgresql", dsn: o.postgresDSN, queue: q, inspector: q, state: st, close: closeAll}, nil
}

func startListener(ctx context.Context, cfg *pgx.ConnConfig) (*pgstore.Listener, error) {
	l, err := pgstore.NewListener(cfg, pgstore.ListenerSettings{})
	if err != nil {
		return nil, err
	}
	if err := l.Start(ctx); err != nil {
		_ = l.Close()
		return nil, err
	}
	if err := l.Listen(ctx, pgstore.NotifyChannel(pgstore.StateTables{})); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// hostOf names the server of a URL-style DSN without its credentials.
func hostOf(dsn contract.Secret) string {
	u, err := url.Parse(dsn.Reveal())
	if err != nil || u.Host == "" {
		return "the configured server"
	}
	return u.Host
}

// redact removes the DSN and its password from a driver's message.
func redact(msg string, dsn contract.Secret) string {
	raw := dsn.Reveal()
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, "[redacted]")
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "[redacted]")
		}
	}
	return msg
}
