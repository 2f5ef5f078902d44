package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/sqlitestore"
)

// newSQLiteBacking is sqlitestore on a new file in dir (the machine's
// temporary directory when empty), removed by cleanup. Its Waker wakes
// claimers in process; the poll is the safety net.
func newSQLiteBacking(dir string, claimers, batch int) backing {
	n := 0
	b := &ourBacking{
		label:    "sqlite",
		poll:     500 * time.Millisecond,
		claimers: claimers,
		maxBatch: batch,
		chunk:    1000,
		loaders:  1, // one writer at a time: more loaders only wait for the lock
	}
	b.open = func(ctx context.Context, conc int) (*instance, error) {
		n++
		d, err := os.MkdirTemp(dir, fmt.Sprintf("adkbench-sqlite-%d-", n))
		if err != nil {
			return nil, err
		}
		db, err := sqlitestore.OpenDB(filepath.Join(d, "adk.db"), sqlitestore.Settings{})
		if err != nil {
			os.RemoveAll(d)
			return nil, err
		}
		q, err := sqlitestore.OpenQueue(ctx, db, nil, sqlitestore.Settings{})
		if err != nil {
			db.Close()
			os.RemoveAll(d)
			return nil, err
		}
		size := func(ctx context.Context) (string, int64, error) {
			var pages, free, pageSize int64
			err := db.QueryRowContext(ctx, "SELECT (SELECT page_count FROM pragma_page_count), (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_size FROM pragma_page_size)").Scan(&pages, &free, &pageSize)
			return "sqlite bytes in use", (pages - free) * pageSize, err
		}
		return &instance{q: q, waker: q, size: size, close: func(context.Context) error {
			err := db.Close()
			os.RemoveAll(d)
			return err
		}}, nil
	}
	b.openState = func(ctx context.Context, conc int, p contract.RunPolicy) (*stateInstance, error) {
		n++
		d, err := os.MkdirTemp(dir, fmt.Sprintf("adkbench-sqlite-state-%d-", n))
		if err != nil {
			return nil, err
		}
		s := sqlitestore.Settings{Runs: p}
		db, err := sqlitestore.OpenDB(filepath.Join(d, "adk.db"), s)
		if err != nil {
			os.RemoveAll(d)
			return nil, err
		}
		st, err := sqlitestore.OpenState(ctx, db, nil, s)
		if err != nil {
			db.Close()
			os.RemoveAll(d)
			return nil, err
		}
		return &stateInstance{s: st, close: func(context.Context) error {
			err := db.Close()
			os.RemoveAll(d)
			return err
		}}, nil
	}
	return b
}
