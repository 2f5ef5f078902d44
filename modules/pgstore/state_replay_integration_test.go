//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

// TestStateReplayContract runs the lost-reply cases over an executor
// that lets a write's statement run and commit, then throws its result
// away and reports a broken connection. pgstore sends again only what
// never reached the server, so the store answers with a retryable error
// and the write has taken effect once.
func TestStateReplayContract(t *testing.T) {
	contracttest.StateReplay(t, func(t *testing.T, clock contract.Clock) (contract.StateStore, contracttest.LoseReply) {
		d := newTestDB(t)
		exec := &losingExec{Executor: d.pool}
		s, err := pgstore.NewState(exec, clock, pgstore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		return s, exec.arm
	})
}

// errReplyLost is what a connection that broke after the statement was
// sent looks like to pgstore.
var errReplyLost = fmt.Errorf("postgres reply lost: %w", io.ErrUnexpectedEOF)

// losingExec loses the result of the next write statement once armed.
// The state store's writes (PutRun, PatchRun, DeleteRun) are each one
// QueryRow statement in its own transaction (Exec is wrapped too, for
// any other); reads (GetRun is a QueryRow too) are never sent while armed
// by the suite.
type losingExec struct {
	pgstore.Executor
	mu      sync.Mutex
	between func()
	lost    bool
}

func (l *losingExec) arm(between func()) func() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.between, l.lost = between, false
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.lost
	}
}

// take disarms and returns the armed between, when the statement ran.
func (l *losingExec) take(ran bool) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.between
	if b == nil || !ran {
		return nil
	}
	l.between, l.lost = nil, true
	return b
}

func (l *losingExec) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := l.Executor.Exec(ctx, sql, args...)
	if b := l.take(err == nil); b != nil {
		b()
		return pgconn.CommandTag{}, errReplyLost
	}
	return tag, err
}

func (l *losingExec) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return losingRow{Row: l.Executor.QueryRow(ctx, sql, args...), l: l}
}

type losingRow struct {
	pgx.Row
	l *losingExec
}

func (r losingRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if b := r.l.take(err == nil || errors.Is(err, pgx.ErrNoRows)); b != nil {
		b()
		return errReplyLost
	}
	return err
}
