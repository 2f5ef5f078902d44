package sqlitestore

import (
	"context"
	"database/sql"
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
// write that replaces them; the data a put's version holds is a row of
// adk_run_blobs (a status patch's version holds none, blob NULL, and
// reads take the data from the next newer version holding some, or from
// the run). A put whose run's oldest version is past the policy's bounds
// moves that version's row to the one it keeps and writes the data over
// its blob row; the run's pruning writes delete the versions past the
// bounds (and their blob rows), oldest first and at most
// contract.VersionPruneBatch, and reads check the bounds themselves, so a
// version past them is never returned even before a write deletes it.

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
// r (as the write left it) past the policy's bounds, when r's Version
// says it is the run's turn and the store keeps versions: at most
// contract.VersionPruneBatch less moved, the versions the write has
// already taken out of the bounds (the one keepVersion moved, or none).
func (s *stateStore) pruneDue(ctx context.Context, e execer, r *contract.Run, now int64, moved int) error {
	if !s.settings.Runs.KeepsVersions() || r.Version%pruneEvery != 0 {
		return nil
	}
	kept, after := s.versionBounds(now)
	return deleteVersions(ctx, e, runVersionsPruneSQL, r.Tenant, r.ID, kept, after, contract.VersionPruneBatch-moved)
}

// keepVersion keeps run r as it is stored, at r.Version, as a version,
// for a put that replaces it, in the put's transaction; it keeps nothing
// when the put will be refused (the run is not at r.Version, or holds a
// fence above r.Fence). When the run's oldest version holds data and
// goes once the run has one more, its row becomes the new version and
// the data is written over its blob row, in place: a run at its bound
// writes no new row and deletes none. Otherwise the data goes into a new
// blob row and the version into a new row. It returns how many versions
// it moved (0 or 1).
func (s *stateStore) keepVersion(ctx context.Context, e execer, r contract.Run, now int64) (int, error) {
	kept, after := s.versionBounds(now)
	res, err := e.ExecContext(ctx, runVersionRecycleSQL, r.Tenant, r.ID, r.Version, r.Fence, kept, after)
	if err != nil {
		return 0, err
	}
	moved, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if moved == 1 {
		_, err = e.ExecContext(ctx, runBlobRecycleSQL, r.Tenant, r.ID, r.Version)
		return 1, err
	}
	_, err = keepCopy(ctx, e, false, r)
	return 0, err
}

// keepLeft is keepVersion for a store that keeps no versions: it keeps
// the run as a version only when the run has versions kept under another
// policy, and reports whether it did.
func keepLeft(ctx context.Context, e execer, r contract.Run) (bool, error) {
	return keepCopy(ctx, e, true, r)
}

// keepCopy keeps run r as a version in a new blob row and a new version
// row (run_blob_keep.sql, then run_version_keep.sql), and reports whether
// it kept one; onlyLeft copies only a run that has versions already. A
// copy that inserts nothing costs what the statement a store keeping no
// versions ran before blob rows existed: one Exec.
func keepCopy(ctx context.Context, e execer, onlyLeft bool, r contract.Run) (bool, error) {
	left := 0
	if onlyLeft {
		left = 1
	}
	res, err := e.ExecContext(ctx, runBlobKeepSQL, r.Tenant, r.ID, r.Version, r.Fence, left)
	if err != nil {
		return false, err
	}
	if k, err := res.RowsAffected(); err != nil || k == 0 {
		return false, err
	}
	n, err := res.LastInsertId()
	if err != nil {
		return false, err
	}
	_, err = e.ExecContext(ctx, runVersionKeepSQL, r.Tenant, r.ID, n)
	return err == nil, err
}

// deleteVersions runs query, a DELETE of versions that returns the blob
// of each, and deletes the blob rows of those that held data.
func deleteVersions(ctx context.Context, e execer, query string, args ...any) error {
	rows, err := e.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	list := []byte{'['}
	for rows.Next() {
		var n sql.NullInt64
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		if n.Valid {
			if len(list) > 1 {
				list = append(list, ',')
			}
			list = strconv.AppendInt(list, n.Int64, 10)
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(list) == 1 {
		return nil
	}
	_, err = e.ExecContext(ctx, runBlobsDeleteSQL, string(append(list, ']')))
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
