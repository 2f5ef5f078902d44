package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// benchArgs is the River job: the seq is all the no-op handler needs.
type benchArgs struct {
	Seq int64 `json:"s"`
}

func (benchArgs) Kind() string { return "adkbench" }

// riverBacking runs River on the shared PostgreSQL, its tables migrated by
// rivermigrate into a scratch schema that cleanup drops.
type riverBacking struct {
	dsn string
	// cooldown is River's FetchCooldown. Its default (100 ms) caps a
	// queue at MaxWorkers jobs per 100 ms; the harness passes River's
	// floor (1 ms) unless told otherwise, so River runs at its best.
	cooldown time.Duration
	// benchMode gives River the settings of its own bench command
	// (FetchCooldown 2 ms, FetchPollInterval 20 ms), for the burndown
	// scenario that repeats it.
	benchMode bool
	pool      *pgxpool.Pool
	schema    string
	client    *river.Client[pgx.Tx]
	w         workload
	nerr      atomic.Int64
	seq       int
}

func (b *riverBacking) name() string      { return "river" }
func (b *riverBacking) peer() bool        { return true }
func (b *riverBacking) enqueueChunk() int { return 1000 }
func (b *riverBacking) enqueuers() int    { return 2 }
func (b *riverBacking) detail() string    { return "" }

func (b *riverBacking) errs() (int64, error) {
	return b.nerr.Load(), nil
}

func (b *riverBacking) queueOf(tenant int) string { return tenantName(tenant) }

func (b *riverBacking) prepare(ctx context.Context, w workload) error {
	b.w = w
	b.seq++
	b.schema = fmt.Sprintf("adkbench_river_%d_%d", os.Getpid(), b.seq)
	cfg, err := pgxpool.ParseConfig(b.dsn)
	if err != nil {
		return err
	}
	// Workers hold no connection while a no-op job runs; the cap keeps a
	// run of 2,000 workers within the server's max_connections.
	cfg.MaxConns = int32(min(w.conc+10, 50))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	b.pool = pool
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+b.schema); err != nil {
		return fmt.Errorf("river: create schema: %w", err)
	}
	driver := riverpgxv5.New(pool)
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: b.schema, Logger: quietLogger()})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river: migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[benchArgs]) error {
		w.rec.handle(j.Args.Seq)
		return nil
	}))
	queues := map[string]river.QueueConfig{}
	// River has no tenants: one queue each, the worker count shared out
	// among the busy ones (at least one worker per queue, as River
	// requires; idle queues get one).
	per := max(1, w.conc/max(1, w.busy))
	for i := range w.tenants {
		n := 1
		if i < max(1, w.busy) {
			n = per
		}
		queues[b.queueOf(i)] = river.QueueConfig{MaxWorkers: n}
	}
	rc := &river.Config{
		Schema:        b.schema,
		Queues:        queues,
		Workers:       workers,
		Logger:        quietLogger(),
		FetchCooldown: b.cooldown,
	}
	if b.benchMode {
		rc.FetchCooldown, rc.FetchPollInterval = 2*time.Millisecond, 20*time.Millisecond
	}
	b.client, err = river.NewClient(driver, rc)
	return err
}

func (b *riverBacking) enqueue(ctx context.Context, jobs []job) error {
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: benchArgs{Seq: j.seq}, InsertOpts: &river.InsertOpts{Queue: b.queueOf(j.tenant)}}
	}
	_, err := b.client.InsertManyFast(ctx, params)
	return err
}

func (b *riverBacking) start(ctx context.Context) error { return b.client.Start(ctx) }

func (b *riverBacking) stop(ctx context.Context) error {
	return b.client.StopAndCancel(ctx)
}

func (b *riverBacking) cleanup(ctx context.Context) error {
	if b.pool == nil {
		return nil
	}
	_, err := b.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+b.schema+" CASCADE")
	b.pool.Close()
	b.pool, b.client = nil, nil
	return err
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
