package sqlitestore

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/adkit/adk/modules/contract"
)

// Fences and versions of runs (contract.RunKeeper; the rules are in the
// contract's run_versions.go). A run's fence is a column of adk_runs,
// checked by the statement that writes the run or, where the write reads
// the run first, in Go inside the same transaction. Earlier versions are
// rows of adk_run_versions, copied from adk_runs in the transaction of the
// write that replaces them (by a status patch without the data, X'' in
// its place, which reads take from the next newer version holding data,
// or from the run); the run's pruning writes delete those past the
// policy's bounds, oldest first and at most contract.VersionPruneBatch,
// and reads check the bounds themselves, so a version past them is never
// returned even before a write deletes it.

// staleFence is the refusal of a write fenced at fence of a run whose
// stored fence is stored, or nil when the write may land (unfenced, or
// at least the stored fence).
func staleFence(tenant, id string, fence, stored int64) error {
	if fence == 0 || fence >= stored {
		return nil
	}
	return &contract.StaleFenceError{Tenant: tenant, ID: id, Fence: fence, Stored: stored}
}

// versionBounds are the arguments of the statements that read kept
// versions: how many of a run's newest are kept (0: none), and the
// UpdatedAt a kept version must be after, by the store's clock at now.
func (s *stateStore) versionBounds(now int64) (kept int, after int64) {
	p := s.settings.Runs
	after = math.MinInt64
	if p.VersionAge > 0 {
		after = now - int64(p.VersionAge)
	}
	return p.MaxKept(), after
}

// pruneEvery is how often a run's writes delete its versions past the
// bounds: the write that leaves the run at a Version that is a multiple
// of it. Every write bumps the Version by one, so each run prunes once
// in pruneEvery writes, whatever their kinds, and holds at most
// pruneEvery-1 versions past the bounds between (reads never return
// them). One prune in eight costs a write an eighth of the statement.
const pruneEvery = 8

// pruneDue deletes, inside the write's transaction, the versions of run
// r (as the write left it) past the policy's bounds, at most
// contract.VersionPruneBatch of them, when r's Version says it is the
// run's turn and the store keeps versions.
func (s *stateStore) pruneDue(ctx context.Context, e execer, r *contract.Run, now int64) error {
	if !s.settings.Runs.KeepsVersions() || r.Version%pruneEvery != 0 {
		return nil
	}
	kept, after := s.versionBounds(now)
	_, err := e.ExecContext(ctx, runVersionsPruneSQL, r.Tenant, r.ID, kept, after, contract.VersionPruneBatch)
	return err
}

// ListRunVersions pages through the run's versions, newest first: the run
// as it is on the first page, then its kept versions by descending
// Version. The cursor is the Version listed last, in decimal; each page is
// one statement, so it reads one snapshot of the file.
func (s *stateStore) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	before, err := parseVersionCursor(page.Cursor)
	if err != nil {
		return contract.RunVersionPage{}, err
	}
	kept, after := s.versionBounds(nanos(s.clock.Now()))
	limit := page.Limit
	out := contract.RunVersionPage{Versions: []contract.Run{}}
	err = s.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, runVersionsPageSQL, tenant, id, before, kept, after, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out.Versions = append(out.Versions, *r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(out.Versions) == 0 {
			// An empty page is a run without versions below the cursor,
			// or no run at all (its versions go with it).
			_, err := scanRun(e.QueryRowContext(ctx, runGetSQL, tenant, id))
			return err
		}
		return nil
	})
	if err != nil {
		return contract.RunVersionPage{}, stateErr(ctx, err)
	}
	if len(out.Versions) > limit {
		out.Versions = out.Versions[:limit]
		out.Next = strconv.FormatInt(out.Versions[limit-1].Version, 10)
	}
	return out, nil
}

// GetRunVersion returns the run as it was at version: the run itself when
// it holds that version, else the kept version, or contract.ErrNotFound.
func (s *stateStore) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	var out *contract.Run
	err := s.db.read(ctx, func(ctx context.Context, e execer) error {
		r, err := s.getVersion(ctx, e, tenant, id, version)
		out = r
		return err
	})
	return out, stateErr(ctx, err)
}

func (s *stateStore) getVersion(ctx context.Context, e execer, tenant, id string, version int64) (*contract.Run, error) {
	kept, after := s.versionBounds(nanos(s.clock.Now()))
	return scanRun(e.QueryRowContext(ctx, runVersionGetSQL, tenant, id, version, kept, after))
}

// ForkRun creates run tenant/newID from version of run tenant/id, in one
// transaction (the caller's when the store is bound, so a fork and the
// work it enqueues commit together). A version not kept is
// contract.ErrNotFound; a newID that exists, a *contract.StateConflictError
// with its version.
func (s *stateStore) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	now := nanos(s.clock.Now())
	var out *contract.Run
	err := s.db.write(ctx, func(ctx context.Context, e execer) error {
		src, err := s.getVersion(ctx, e, tenant, id, version)
		if err != nil {
			return err
		}
		var data []byte
		if len(src.Data) > 0 {
			data = src.Data
		}
		c := src.Counters
		r, err := scanRun(e.QueryRowContext(ctx, runForkSQL, tenant, newID, src.Session, src.Status, data,
			c.InputTokens, c.OutputTokens, c.CostMicros, c.Iterations, c.Cursor, now))
		if err == nil {
			out = r
			return nil
		}
		if !errors.Is(err, contract.ErrNotFound) {
			return err
		}
		conflict := &contract.StateConflictError{Tenant: tenant, ID: newID}
		stored, err := scanRun(e.QueryRowContext(ctx, runGetSQL, tenant, newID))
		if err != nil {
			return err
		}
		conflict.Actual = stored.Version
		return conflict
	})
	return out, stateErr(ctx, err)
}

// parseVersionCursor reads a ListRunVersions cursor: "" for the first
// page (0), else the Version listed last.
func parseVersionCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n <= 0 {
		return 0, badCursor()
	}
	return n, nil
}
