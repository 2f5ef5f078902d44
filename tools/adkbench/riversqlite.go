package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/adkit/adk/modules/sqlitestore"
)

// riverSQLiteBacking runs River's SQLite driver on a new file in dir, on
// the same driver (modernc.org/sqlite) and the same connection settings
// as the sqlite backing, so the two differ only in the queue.
type riverSQLiteBacking struct {
	dir      string
	cooldown time.Duration
	db       *sql.DB
	path     string
	client   *river.Client[*sql.Tx]
	w        workload
	nerr     atomic.Int64
	seq      int
}

func (b *riverSQLiteBacking) name() string      { return "riversqlite" }
func (b *riverSQLiteBacking) peer() bool        { return true }
func (b *riverSQLiteBacking) enqueueChunk() int { return 1000 }
func (b *riverSQLiteBacking) enqueuers() int    { return 1 }
func (b *riverSQLiteBacking) detail() string    { return "" }

func (b *riverSQLiteBacking) errs() (int64, error) { return b.nerr.Load(), nil }

func (b *riverSQLiteBacking) prepare(ctx context.Context, w workload) error {
	b.w = w
	b.seq++
	d, err := os.MkdirTemp(b.dir, fmt.Sprintf("adkbench-riversqlite-%d-", b.seq))
	if err != nil {
		return err
	}
	b.path = d
	db, err := sqlitestore.OpenDB(filepath.Join(d, "river.db"), sqlitestore.Settings{})
	if err != nil {
		return err
	}
	b.db = db
	driver := riversqlite.New(db)
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quietLogger()})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("riversqlite: migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[benchArgs]) error {
		w.rec.handle(j.Args.Seq)
		return nil
	}))
	queues := map[string]river.QueueConfig{}
	per := max(1, w.conc/max(1, w.busy))
	for i := range w.tenants {
		n := 1
		if i < max(1, w.busy) {
			n = per
		}
		queues[tenantName(i)] = river.QueueConfig{MaxWorkers: n}
	}
	b.client, err = river.NewClient(driver, &river.Config{
		Queues: queues, Workers: workers, Logger: quietLogger(), FetchCooldown: b.cooldown,
	})
	return err
}

func (b *riverSQLiteBacking) enqueue(ctx context.Context, jobs []job) error {
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: benchArgs{Seq: j.seq}, InsertOpts: &river.InsertOpts{Queue: tenantName(j.tenant)}}
	}
	_, err := b.client.InsertMany(ctx, params)
	return err
}

func (b *riverSQLiteBacking) start(ctx context.Context) error { return b.client.Start(ctx) }

func (b *riverSQLiteBacking) stop(ctx context.Context) error { return b.client.StopAndCancel(ctx) }

func (b *riverSQLiteBacking) cleanup(context.Context) error {
	if b.db == nil {
		return nil
	}
	err := b.db.Close()
	os.RemoveAll(b.path)
	b.db, b.client = nil, nil
	return err
}
