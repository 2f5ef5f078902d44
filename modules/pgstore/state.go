package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
)

// PostgresStateStore is a contract.StateStore on PostgreSQL tables. The
// counters are columns, so PatchRun adds in SQL and concurrent patches all
// land; PutRun is optimistic on the version column; runs page by a seq the
// database gives once. It is a contract.RunKeeper too: the fence is a
// column of the run, checked by the write's own statement, and versions
// (Settings.Runs) are rows of {runs}_versions written by it. It is safe
// for concurrent use.
//
// Its state methods are the contract's front door ([contract.StateFront]),
// which checks every call before the store's driver sees it.
type PostgresStateStore struct {
	contract.StateFront
	d *stateStore
}

// stateStore is the driver behind a PostgresStateStore's front door.
type stateStore struct {
	db       *db
	clock    contract.Clock
	settings Settings
	q        queries
	// turns remembers the Version the store's writes last left runs at,
	// so that a patch can carry its run's prune (nil without versions).
	turns *versionMemo
}

var (
	_ contract.StateStore  = (*PostgresStateStore)(nil)
	_ contract.RunKeeper   = (*PostgresStateStore)(nil)
	_ contract.StateDriver = (*stateStore)(nil)
	_ contract.RunKeeper   = (*stateStore)(nil)
)

// prepare checks what a store or queue is built from and fills the
// defaults: a nil clock means the system clock.
func prepare(exec Executor, clock contract.Clock, s Settings) (Settings, contract.Clock, error) {
	if exec == nil {
		return s, nil, &contract.ValidationError{Field: "exec", Problem: "is nil; pass a *pgxpool.Pool, *pgx.Conn or pgx.Tx"}
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

// OpenState returns a state store on exec after Verify has accepted the
// database: the schema version and a non-zero statement_timeout.
func OpenState(ctx context.Context, exec Executor, clock contract.Clock, s Settings) (*PostgresStateStore, error) {
	st, err := NewState(exec, clock, s)
	if err != nil {
		return nil, err
	}
	if err := Verify(ctx, exec, st.d.settings.Tables); err != nil {
		return nil, err
	}
	return st, nil
}

// NewState returns a state store on exec without verifying the database
// (tests do this). It refuses table names that are not plain identifiers.
// A nil clock means the system clock.
func NewState(exec Executor, clock contract.Clock, s Settings) (*PostgresStateStore, error) {
	s, clock, err := prepare(exec, clock, s)
	if err != nil {
		return nil, err
	}
	st := &stateStore{db: newDB(exec, s.AcquireTimeout), clock: clock, settings: s, q: loadQueries(s.Tables)}
	if s.Runs.KeepsVersions() {
		st.turns = newVersionMemo()
	}
	return st.front(), nil
}

func (s *stateStore) front() *PostgresStateStore {
	return &PostgresStateStore{StateFront: contract.NewStateFront(s, s.settings.MaxValueBytes, s.settings.Runs), d: s}
}

// Bound returns a store that runs every call inside tx, the caller's
// transaction: what it writes commits or rolls back with tx. It retries
// nothing, because a failed statement has already aborted tx.
func (s *PostgresStateStore) Bound(tx pgx.Tx) *PostgresStateStore {
	b := *s.d
	b.db = s.d.db.boundTo(tx)
	return b.front()
}

// GetRun returns the run, or contract.ErrNotFound.
func (s *stateStore) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	var run *contract.Run
	err := s.db.run(ctx, func(ctx context.Context, e Executor) error {
		r, err := scanRun(e.QueryRow(ctx, s.q.runGet, tenant, id))
		run = r
		return err
	})
	return run, stateErr(err)
}

// PutRun creates the run (Version 0) or replaces its Session, Status and
// Data when Version equals the stored one; otherwise it returns a
// *contract.StateConflictError with both versions and writes nothing. A
// fenced put (Run.Fence above 0) whose fence is below the run's is
// refused with a *contract.StaleFenceError first. Each refusal is decided
// on the row the statement judged, read in that statement (see
// queries/run_update.sql and run_update_keep.sql), so it never reports
// the version the caller held. On a store that keeps versions, an update
// keeps the run as it was in the same statement, and the update that
// leaves the run at a Version that is a multiple of pruneEvery also
// deletes the run's versions past the bounds (run_update_keep_prune.sql).
func (s *stateStore) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	var data []byte
	if len(run.Data) > 0 {
		data = run.Data
	}
	now := s.clock.Now()
	keep := s.settings.Runs.KeepsVersions()
	var out *contract.Run
	err := s.db.run(ctx, func(ctx context.Context, e Executor) error {
		for range settledTries {
			var row pgx.Row
			switch {
			case run.Version == 0:
				row = e.QueryRow(ctx, s.q.runInsert, run.Tenant, run.ID, run.Session, run.Status, data, now, run.Fence)
			case keep && pruneDue(run.Version+1):
				kept, cut := s.versionBounds(now)
				row = e.QueryRow(ctx, s.q.runUpdateKeepPrune, run.Tenant, run.ID, run.Session, run.Status, data, now, run.Version, run.Fence,
					kept, cut, contract.VersionPruneBatch)
			case keep:
				row = e.QueryRow(ctx, s.q.runUpdateKeep, run.Tenant, run.ID, run.Session, run.Status, data, now, run.Version, run.Fence)
			default:
				row = e.QueryRow(ctx, s.q.runUpdate, run.Tenant, run.ID, run.Session, run.Status, data, now, run.Version, run.Fence)
			}
			written, r, err := scanWrite(row)
			switch {
			case err != nil && !errors.Is(err, contract.ErrNotFound):
				return err
			case written:
				out = r
				s.turns.note(r)
				return nil
			case r == nil && run.Version != 0:
				return &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version}
			case r != nil && stale(run.Fence, r.Fence):
				return &contract.StaleFenceError{Tenant: run.Tenant, ID: run.ID, Fence: run.Fence, Stored: r.Fence}
			case r != nil && r.Version != run.Version:
				return &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version, Actual: r.Version}
			}
			// The run moved on after the statement's snapshot (a create
			// that collided with a run the snapshot does not hold, or an
			// update that found the held version replaced): nothing was
			// written, so the statement runs again, on a new snapshot.
		}
		return unsettled(run.Tenant, run.ID)
	})
	return out, stateErr(err)
}

// stale reports whether a write under fence is refused by a run whose
// stored fence is stored: a fenced write below it.
func stale(fence, stored int64) bool { return fence != 0 && stored > fence }

// settledTries is how often a write runs again when the run moved on
// between its statement's snapshot and its check. Each try writes nothing
// unless it succeeds. Eight clients creating and deleting one run as fast
// as they can needed a second try for about one create in two and at
// most nine tries (measured); clients that do not all write one run at
// once need none.
const settledTries = 32

func unsettled(tenant, id string) error {
	return &contract.StatePersistenceError{Reason: contract.ReasonUnavailable, Transient: true,
		Err: fmt.Errorf("run %q/%q changed under %d tries of one write; nothing was written", tenant, id, settledTries)}
}

// PatchRun adds the patch's counters and sets its status when given. A
// fenced patch below the run's fence is refused with a
// *contract.StaleFenceError; a patch that would take a counter past the
// bigint range is refused whole with a *contract.CounterOverflowError
// naming the counter. On a store that keeps versions, a patch that
// changes the status keeps the run as it was: its first try takes no row
// lock (queries/run_patch_first.sql), writes only when the run has not
// moved on since the statement's snapshot and returns nothing when it
// did not write; a try after it locks the row (run_patch_keep.sql) and
// reports a refusal or a missing run. A patch that only adds to the
// counters keeps none. A patch of either kind that leaves the run at a
// Version that is a multiple of pruneEvery also deletes the run's
// versions past the bounds: in its own statement when the store expected
// that turn (the first try is then run_patch_first_prune.sql or
// run_patch_prune.sql, see pruneTurnAhead), otherwise in a statement of
// its own after it (see pruneAfter).
func (s *stateStore) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	c := p.Counters
	versions := s.settings.Runs.KeepsVersions()
	keep := p.Status != "" && versions
	ahead := versions && s.turns.pruneTurnAhead(tenant, id)
	var out *contract.Run
	err := s.db.run(ctx, func(ctx context.Context, e Executor) error {
		for try := range settledTries {
			now := s.clock.Now()
			args := []any{tenant, id, c.InputTokens, c.OutputTokens, c.CostMicros, c.Iterations, c.Cursor, p.Status, now, p.Fence}
			// A try carries the prune when the store expects this patch to
			// be the run's turn; a status patch's tries after the first
			// lock the row and never do.
			inline := ahead && (try == 0 || !keep)
			var sql string
			switch {
			case inline:
				sql = s.q.runPatchPrune
				if keep {
					sql = s.q.runPatchFirstPrune
				}
				kept, cut := s.versionBounds(now)
				args = append(args, kept, cut, contract.VersionPruneBatch, int64(pruneEvery))
			case keep && try == 0:
				sql = s.q.runPatchFirst
			case keep:
				sql = s.q.runPatchKeep
			default:
				sql = s.q.runPatch
			}
			written, r, err := scanWrite(e.QueryRow(ctx, sql, args...))
			switch {
			case keep && try == 0 && errors.Is(err, contract.ErrNotFound):
				// The first try returns a row only when it wrote: the
				// locking try decides whether the run moved on, is
				// missing or refuses the patch.
				continue
			case err != nil:
				return err
			case written:
				out = r
				s.turns.note(r)
				if inline {
					// The statement pruned if it left the run on its turn.
					return nil
				}
				return s.pruneAfter(ctx, e, r, now)
			case stale(p.Fence, r.Fence):
				return &contract.StaleFenceError{Tenant: tenant, ID: id, Fence: p.Fence, Stored: r.Fence}
			}
			if err := contract.CheckPatch(tenant, id, r.Counters, c); err != nil {
				return err
			}
			// The snapshot's run passes both checks: a concurrent write
			// moved the row on after it. Nothing was written; try again.
		}
		return unsettled(tenant, id)
	})
	return out, stateErr(err)
}

// ListRuns pages through the tenant's runs by Seq.
func (s *stateStore) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	return s.list(ctx, page, func(after int64, n int) (string, []any) {
		return s.q.runList, []any{tenant, after, n}
	})
}

// ListSessionRuns pages through one session's runs by Seq.
func (s *stateStore) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	return s.list(ctx, page, func(after int64, n int) (string, []any) {
		return s.q.runListSession, []any{tenant, session, after, n}
	})
}

func (s *stateStore) list(ctx context.Context, page contract.PageRequest, query func(after int64, n int) (string, []any)) (contract.RunPage, error) {
	limit := page.Limit
	after, err := parseSeqCursor(page.Cursor)
	if err != nil {
		return contract.RunPage{}, err
	}
	out := contract.RunPage{Runs: []contract.Run{}}
	err = s.db.run(ctx, func(ctx context.Context, e Executor) error {
		out.Runs = out.Runs[:0]
		sql, args := query(after, limit+1)
		rows, err := e.Query(ctx, sql, args...)
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
		return contract.RunPage{}, stateErr(err)
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

// DeleteRunFenced is DeleteRun under a fence: a fence below the run's is
// refused with a *contract.StaleFenceError, deleting nothing. The check
// and the delete are one statement on the run's locked row
// (queries/run_delete.sql).
func (s *stateStore) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	return stateErr(s.db.run(ctx, func(ctx context.Context, e Executor) error {
		var deleted bool
		var stored *int64
		if err := e.QueryRow(ctx, s.q.runDelete, tenant, id, fence).Scan(&deleted, &stored); err != nil {
			return err
		}
		switch {
		case deleted:
			return nil
		case stored == nil:
			return contract.ErrNotFound
		}
		return &contract.StaleFenceError{Tenant: tenant, ID: id, Fence: fence, Stored: *stored}
	}))
}

// scanWrite reads the row a write statement returns: whether it wrote,
// then the run as written or, when it did not, as stored. No row is
// contract.ErrNotFound.
func scanWrite(row pgx.Row) (bool, *contract.Run, error) {
	var written bool
	r, err := scanRunInto(row, &written)
	return written, r, err
}

// scanRun reads one row of run columns; no row is contract.ErrNotFound.
func scanRun(row pgx.Row) (*contract.Run, error) { return scanRunInto(row) }

// scanRunInto reads the leading columns into lead, then the run columns.
func scanRunInto(row pgx.Row, lead ...any) (*contract.Run, error) {
	var r contract.Run
	var data []byte
	c := &r.Counters
	err := row.Scan(append(lead, &r.Tenant, &r.ID, &r.Seq, &r.Session, &r.Status, &data, &r.Version,
		&c.InputTokens, &c.OutputTokens, &c.CostMicros, &c.Iterations, &c.Cursor, &r.CreatedAt, &r.UpdatedAt, &r.Fence)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, contract.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		r.Data = data
	}
	r.CreatedAt = utc(r.CreatedAt)
	r.UpdatedAt = utc(r.UpdatedAt)
	return &r, nil
}

// utc drops the local zone pgx gives timestamps, so values compare the
// way the caller's clock wrote them.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func seqCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

func parseSeqCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n < 0 {
		return 0, &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this listing returned; pass \"\" or the Next of the previous page"}
	}
	return n, nil
}
