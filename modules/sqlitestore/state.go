package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// SQLiteStateStore is a contract.StateStore on one SQLite file. The
// counters are columns, so PatchRun adds in SQL; every write is one
// BEGIN IMMEDIATE transaction, so a put's version check and its write see
// the same row. It is safe for concurrent use, and several processes may
// share the file.
//
// Its state methods are the contract's front door ([contract.StateFront]),
// which checks every call before the store's driver sees it.
type SQLiteStateStore struct {
	contract.StateFront
	d *stateStore
}

// stateStore is the driver behind a SQLiteStateStore's front door.
type stateStore struct {
	db       *db
	clock    contract.Clock
	settings Settings
}

var (
	_ contract.StateStore  = (*SQLiteStateStore)(nil)
	_ contract.StatsSource = (*SQLiteStateStore)(nil)
	_ contract.StateDriver = (*stateStore)(nil)
	_ contract.RunKeeper   = (*stateStore)(nil)
)

// prepare checks what a backing is built from and fills the defaults: a
// nil clock means the system clock.
func prepare(d *sql.DB, clock contract.Clock, s Settings) (Settings, contract.Clock, error) {
	if d == nil {
		return s, nil, nilDB()
	}
	s, err := s.normalized()
	if err != nil {
		return s, nil, err
	}
	if clock == nil {
		clock = contract.SystemClock{}
	}
	return s, clock, nil
}

// OpenState returns a state store on db after Prepare has created the
// schema in an empty file or verified an existing one.
func OpenState(ctx context.Context, d *sql.DB, clock contract.Clock, s Settings) (*SQLiteStateStore, error) {
	st, err := NewState(d, clock, s)
	if err != nil {
		return nil, err
	}
	if err := Prepare(ctx, d, st.d.settings); err != nil {
		return nil, err
	}
	return st, nil
}

// NewState returns a state store on db without preparing the file. A nil
// clock means the system clock.
func NewState(d *sql.DB, clock contract.Clock, s Settings) (*SQLiteStateStore, error) {
	s, clock, err := prepare(d, clock, s)
	if err != nil {
		return nil, err
	}
	return (&stateStore{db: newDB(d), clock: clock, settings: s}).front(), nil
}

func (s *stateStore) front() *SQLiteStateStore {
	return &SQLiteStateStore{StateFront: contract.NewStateFront(s, s.settings.MaxValueBytes, s.settings.Runs), d: s}
}

// Bound returns a store that runs every call inside tx, the caller's
// transaction: what it writes commits or rolls back with tx. Begin tx on
// a *sql.DB from OpenDB, whose transactions take the write lock at BEGIN
// (BEGIN IMMEDIATE).
func (s *SQLiteStateStore) Bound(tx *sql.Tx) *SQLiteStateStore {
	b := *s.d
	b.db = s.d.db.boundTo(tx)
	return b.front()
}

// GetRun returns the run, or contract.ErrNotFound.
func (s *stateStore) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	var run *contract.Run
	err := s.db.read(ctx, func(ctx context.Context, e execer) error {
		r, err := scanRun(e.QueryRowContext(ctx, runGetSQL, tenant, id))
		run = r
		return err
	})
	return run, stateErr(ctx, err)
}

// PutRun creates the run (Version 0) or replaces its Session, Status and
// Data when Version equals the stored one; otherwise it returns a
// *contract.StateConflictError with both versions and writes nothing. A
// fenced put meeting a run with a higher fence is refused with a
// *contract.StaleFenceError before the version is looked at. When the
// store keeps versions, the run as it was is kept in the same
// transaction. When it keeps none but the run has versions kept under
// another policy, the put deletes them, a batch at a time, oldest first;
// while some are left it keeps the data it replaces with them, so those
// kept by a status patch (which read their data from a newer version)
// still read what the run held.
func (s *stateStore) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	var data []byte
	if len(run.Data) > 0 {
		data = run.Data
	}
	now := nanos(s.clock.Now())
	keep := run.Version != 0 && s.settings.Runs.KeepsVersions()
	var out *contract.Run
	err := s.db.write(ctx, func(ctx context.Context, e execer) error {
		var row *sql.Row
		left := false // versions left by another policy, when this store keeps none
		moved := 0    // 1 when the keep moved the oldest version
		if run.Version == 0 {
			row = e.QueryRowContext(ctx, runInsertSQL, run.Tenant, run.ID, run.Session, run.Status, data, now, run.Fence)
		} else {
			// Either keeps nothing when the update below is refused:
			// both check the version and the fence.
			var err error
			if keep {
				moved, err = s.keepVersion(ctx, e, run, now)
			} else {
				left, err = keepLeft(ctx, e, run)
			}
			if err != nil {
				return err
			}
			row = e.QueryRowContext(ctx, runUpdateSQL, run.Tenant, run.ID, run.Session, run.Status, data, now, run.Version, run.Fence)
		}
		r, err := scanRun(row)
		if err == nil {
			out = r
			if left {
				// This store keeps none: the versions left go, oldest
				// first, a batch a put.
				return deleteVersions(ctx, e, runVersionsPruneSQL, r.Tenant, r.ID, 0, int64(math.MinInt64), contract.VersionPruneBatch)
			}
			return s.pruneDue(ctx, e, r, now, moved)
		}
		if !errors.Is(err, contract.ErrNotFound) {
			return err
		}
		stored, err := scanRun(e.QueryRowContext(ctx, runGetSQL, run.Tenant, run.ID))
		conflict := &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version}
		switch {
		case err == nil:
			if stale := staleFence(run.Tenant, run.ID, run.Fence, stored.Fence); stale != nil {
				return stale
			}
			conflict.Actual = stored.Version
		case !errors.Is(err, contract.ErrNotFound):
			return err
		}
		return conflict
	})
	return out, stateErr(ctx, err)
}

// PatchRun adds the patch's counters and sets its status when given. A
// patch that would take a counter past the int64 range is refused whole
// with a *contract.CounterOverflowError naming the counter; a fenced
// patch meeting a run with a higher fence, with a
// *contract.StaleFenceError, before the counters are looked at. A patch
// that changes the status keeps the run as it was as a version when the
// store keeps versions, without its data, which the patch leaves as it
// is (reads take it from the next newer version that holds it).
func (s *stateStore) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	c := p.Counters
	now := nanos(s.clock.Now())
	var out *contract.Run
	err := s.db.write(ctx, func(ctx context.Context, e execer) error {
		stored, err := scanRun(e.QueryRowContext(ctx, runGetSQL, tenant, id))
		if err != nil {
			return err
		}
		if stale := staleFence(tenant, id, p.Fence, stored.Fence); stale != nil {
			return stale
		}
		if err := contract.CheckPatch(tenant, id, stored.Counters, c); err != nil {
			return err
		}
		keep := p.Status != "" && p.Status != stored.Status && s.settings.Runs.KeepsVersions()
		if keep {
			if _, err := e.ExecContext(ctx, runVersionKeepPatchSQL, tenant, id, stored.Version); err != nil {
				return err
			}
		}
		r, err := scanRun(e.QueryRowContext(ctx, runPatchSQL, tenant, id,
			c.InputTokens, c.OutputTokens, c.CostMicros, c.Iterations, c.Cursor, p.Status, now, p.Fence))
		if err != nil {
			return err
		}
		out = r
		return s.pruneDue(ctx, e, r, now, 0)
	})
	return out, stateErr(ctx, err)
}

// ListRuns pages through the tenant's runs by Seq.
func (s *stateStore) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	return s.list(ctx, page, func(after int64, n int) (string, []any) {
		return runListSQL, []any{tenant, after, n}
	})
}

// ListSessionRuns pages through one session's runs by Seq.
func (s *stateStore) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	return s.list(ctx, page, func(after int64, n int) (string, []any) {
		return runListSessionSQL, []any{tenant, session, after, n}
	})
}

func (s *stateStore) list(ctx context.Context, page contract.PageRequest, q func(after int64, n int) (string, []any)) (contract.RunPage, error) {
	limit := page.Limit
	after, err := parseSeqCursor(page.Cursor)
	if err != nil {
		return contract.RunPage{}, err
	}
	out := contract.RunPage{Runs: []contract.Run{}}
	err = s.db.read(ctx, func(ctx context.Context, e execer) error {
		text, args := q(after, limit+1)
		rows, err := e.QueryContext(ctx, text, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out.Runs = append(out.Runs, *r)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.RunPage{}, stateErr(ctx, err)
	}
	if len(out.Runs) > limit {
		out.Runs = out.Runs[:limit]
		out.Next = seqCursor(out.Runs[limit-1].Seq)
	}
	return out, nil
}

// DeleteRun removes the run and its versions, or returns
// contract.ErrNotFound.
func (s *stateStore) DeleteRun(ctx context.Context, tenant, id string) error {
	return s.DeleteRunFenced(ctx, tenant, id, 0)
}

// DeleteRunFenced is DeleteRun under a fence: a run whose fence is above
// it is left whole and the delete refused with a
// *contract.StaleFenceError.
func (s *stateStore) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	return stateErr(ctx, s.db.write(ctx, func(ctx context.Context, e execer) error {
		res, err := e.ExecContext(ctx, runDeleteSQL, tenant, id, fence)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			stored, err := scanRun(e.QueryRowContext(ctx, runGetSQL, tenant, id))
			if err != nil {
				return err
			}
			if stale := staleFence(tenant, id, fence, stored.Fence); stale != nil {
				return stale
			}
			return contract.ErrNotFound
		}
		return deleteVersions(ctx, e, runVersionsDeleteSQL, tenant, id)
	}))
}

// Stats returns the store's write counters (see SQLiteWorkQueue.Stats).
func (s *SQLiteStateStore) Stats() contract.Stats { return s.d.db.stats.snapshot() }

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRun reads one row of run columns; no row is contract.ErrNotFound.
func scanRun(row scanner) (*contract.Run, error) {
	var r contract.Run
	var data []byte
	var created, updated int64
	c := &r.Counters
	err := row.Scan(&r.Tenant, &r.ID, &r.Seq, &r.Session, &r.Status, &data, &r.Version,
		&c.InputTokens, &c.OutputTokens, &c.CostMicros, &c.Iterations, &c.Cursor, &created, &updated, &r.Fence)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, contract.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		r.Data = data
	}
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &r, nil
}

// nanos is how a time is stored: nanoseconds since the Unix epoch, 0 for
// the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func seqCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

func parseSeqCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n < 0 {
		return 0, badCursor()
	}
	return n, nil
}

func badCursor() error {
	return &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this listing returned; pass \"\" or the Next of the previous page"}
}
