package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// newPGBacking is pgstore on the shared PostgreSQL, its expected schema
// applied to a scratch schema (reached through search_path) that cleanup
// drops. With listen it wakes claimers through a Listener (LISTEN/NOTIFY);
// without, it is the poll-only fallback at pgstore's default interval.
func newPGBacking(dsn string, listen bool, claimers, batch int) backing {
	label := "pg-poll"
	if listen {
		label = "pg-listen"
	}
	n := 0
	b := &ourBacking{
		label:    label,
		poll:     pgstore.DefaultPollInterval,
		claimers: claimers,
		maxBatch: batch,
		chunk:    500,
		loaders:  2,
	}
	if listen {
		b.poll = 500 * time.Millisecond // the safety net; wakes come by NOTIFY
	}
	b.open = func(ctx context.Context, conc int) (*instance, error) {
		n++
		schema := fmt.Sprintf("adkbench_pg_%d_%d_%s", os.Getpid(), n, map[bool]string{true: "l", false: "p"}[listen])
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = "60000"
		// claimers + two completers + loaders, and some room.
		cfg.MaxConns = int32(claimers + 2 + b.loaders + 2)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, err
		}
		fail := func(err error) (*instance, error) {
			_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			pool.Close()
			return nil, err
		}
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			pool.Close()
			return nil, fmt.Errorf("create schema: %w", err)
		}
		if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
			return fail(fmt.Errorf("apply schema: %w", err))
		}
		s := pgstore.Settings{AcquireTimeout: 10 * time.Second}
		var l *pgstore.Listener
		if listen {
			lc, err := pgx.ParseConfig(dsn)
			if err != nil {
				return fail(err)
			}
			if l, err = pgstore.NewListener(lc, pgstore.ListenerSettings{}); err != nil {
				return fail(err)
			}
			if err := l.Start(ctx); err != nil {
				return fail(err)
			}
			if err := l.Listen(ctx, pgstore.NotifyChannel(s.Tables)); err != nil {
				l.Close()
				return fail(err)
			}
			s.Listener = l
		}
		q, err := pgstore.OpenQueue(ctx, pool, nil, s)
		if err != nil {
			if l != nil {
				l.Close()
			}
			return fail(err)
		}
		size := func(ctx context.Context) (string, int64, error) {
			var n int64
			err := pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
				FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
				WHERE s.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&n)
			return "pg table bytes", n, err
		}
		return &instance{q: q, waker: q, size: size, close: func(ctx context.Context) error {
			if l != nil {
				l.Close()
			}
			_, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			pool.Close()
			return err
		}, settle: func(ctx context.Context) error {
			// What autovacuum would do to the fresh rows, done now and
			// waited for: otherwise it runs for seconds beside the
			// samples (VACUUM of a million inserted rows, with no cost
			// delay on this table) and decides which side looks slower.
			_, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+schema+".adk_work, "+schema+".adk_queue_turns")
			return err
		}}, nil
	}
	b.openState = func(ctx context.Context, conc int, p contract.RunPolicy) (*stateInstance, error) {
		n++
		schema := fmt.Sprintf("adkbench_pgstate_%d_%d", os.Getpid(), n)
		pool, drop, err := pgScratch(ctx, dsn, schema, int32(conc+2))
		if err != nil {
			return nil, err
		}
		s, err := pgstore.OpenState(ctx, pool, nil, pgstore.Settings{AcquireTimeout: 10 * time.Second, Runs: p})
		if err != nil {
			_ = drop(context.Background())
			return nil, err
		}
		return &stateInstance{s: s, close: drop}, nil
	}
	return b
}

// pgScratch opens a pool of at most maxConns connections whose
// search_path is a new schema holding pgstore's expected schema; drop
// removes the schema and closes the pool.
func pgScratch(ctx context.Context, dsn, schema string, maxConns int32) (*pgxpool.Pool, func(context.Context) error, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = "60000"
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	drop := func(ctx context.Context) error {
		_, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		pool.Close()
		return err
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("create schema: %w", err)
	}
	if _, err := pool.Exec(ctx, pgstore.ExpectedSchema); err != nil {
		_ = drop(context.Background())
		return nil, nil, fmt.Errorf("apply schema: %w", err)
	}
	return pool, drop, nil
}
