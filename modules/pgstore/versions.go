package pgstore

import (
	"context"
	"errors"
	"hash/maphash"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/adkit/adk/modules/contract"
)

// versionBounds returns what the store's RunPolicy keeps, as the version
// statements take it: how many versions (0 for none) and the age cut (a
// version updated at or before it is past VersionAge; -infinity when the
// policy sets no age), by the store's clock at now.
func (s *stateStore) versionBounds(now time.Time) (int, pgtype.Timestamptz) {
	p := s.settings.Runs
	cut := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	if p.VersionAge > 0 {
		cut = pgtype.Timestamptz{Time: now.Add(-p.VersionAge), Valid: true}
	}
	return p.MaxKept(), cut
}

// pruneEvery is how often a run's writes delete its versions past the
// policy's bounds: the write that leaves the run at a Version that is a
// multiple of it. Every write bumps the Version by one, so each run
// prunes once in pruneEvery writes, whatever their kinds, and holds at
// most pruneEvery-1 versions past the bounds between (reads never return
// them: each read checks the bounds itself). sqlitestore prunes on the
// same turn. The prune is the dearest part of a write that keeps a
// version: a statement that carries it, even when it deletes nothing,
// costs about a third more than one without it (the README has the
// figures).
const pruneEvery = 8

// pruneDue reports whether the write that leaves a run at version is the
// one that prunes the run's versions.
func pruneDue(version int64) bool { return version%pruneEvery == 0 }

// memoSlots is how many runs a store remembers the last Version of (see
// versionMemo): 4,096 pointers, 32 KiB a store that keeps versions.
const memoSlots = 4096

// versionMemo remembers the Version a write of the store last left a
// run at, for up to memoSlots runs: a run has one slot, chosen by a hash
// of its key, and a run that hashes to a slot another holds takes it
// over. A patch reads it to know, before it is sent, whether it is likely
// to be its run's turn to prune (pruneTurnAhead). It is a guess only:
// another store's writes move the run on unseen, and a slot may hold
// another run. The statement that carries the prune checks the Version it
// leaves itself, so a wrong guess costs time, never a version. Safe for
// concurrent use; a nil memo remembers nothing.
type versionMemo struct {
	seed  maphash.Seed
	slots [memoSlots]atomic.Pointer[memoEntry]
}

// memoEntry is one run's slot of a versionMemo.
type memoEntry struct {
	tenant, id string
	version    int64
}

func newVersionMemo() *versionMemo { return &versionMemo{seed: maphash.MakeSeed()} }

func (m *versionMemo) slot(tenant, id string) *atomic.Pointer[memoEntry] {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteString(tenant)
	h.WriteByte(0)
	h.WriteString(id)
	return &m.slots[h.Sum64()%memoSlots]
}

// note remembers the Version a write of the store left run r at.
func (m *versionMemo) note(r *contract.Run) {
	if m == nil || r == nil {
		return
	}
	m.slot(r.Tenant, r.ID).Store(&memoEntry{tenant: r.Tenant, id: r.ID, version: r.Version})
}

// pruneTurnAhead reports whether the next write of run tenant/id is
// likely to be its turn to prune: the Version the store's last write left
// it at is one below a multiple of pruneEvery. A patch learns the Version
// it leaves only from its result, so without this guess the patch on the
// turn prunes in a statement (and, outside a caller's transaction, a
// transaction and a round trip) of its own after it; with it, the patch
// sends the statement that carries the prune, gated on the Version it
// leaves (run_patch_first_prune.sql, run_patch_prune.sql). A put knows
// the Version it leaves and needs no guess.
func (m *versionMemo) pruneTurnAhead(tenant, id string) bool {
	if m == nil {
		return false
	}
	e := m.slot(tenant, id).Load()
	return e != nil && e.tenant == tenant && e.id == id && pruneDue(e.version+1)
}

// pruneAfter deletes the versions of run r, as a patch just left it, past
// the policy's bounds (at most contract.VersionPruneBatch), when the
// store keeps versions and it is r's turn, and the patch's statement did
// not carry the prune (the store did not expect the turn, see
// pruneTurnAhead). A patch does not know the Version it leaves until it
// has written (a put does, and prunes in its own statement), so this
// prune is a statement of its own, sent on the patch's connection after
// it: in a transaction given to Bound it is part of that transaction, and
// its error is returned because the transaction is then aborted.
// Otherwise the patch has committed before the prune runs, and a prune
// that fails is not the patch's failure (a caller that retried the patch
// would add its counters twice): the error is dropped and the run's next
// turn deletes what this one did not, since each turn deletes up to a
// batch and a run gains at most pruneEvery versions between turns. That
// prune is a transaction of its own, and its commit does not wait for the
// WAL flush (run_prune_async.sql): a prune lost to a crash deletes nothing
// a read returns, and the next turn deletes it again.
func (s *stateStore) pruneAfter(ctx context.Context, e Executor, r *contract.Run, now time.Time) error {
	if !s.settings.Runs.KeepsVersions() || !pruneDue(r.Version) {
		return nil
	}
	kept, cut := s.versionBounds(now)
	if s.db.bound {
		_, err := e.Exec(ctx, s.q.runVersionsPrune, r.Tenant, r.ID, kept, cut, contract.VersionPruneBatch)
		return err
	}
	_, _ = e.Exec(ctx, s.q.runPruneAsync, r.Tenant, r.ID, kept, cut, contract.VersionPruneBatch)
	return nil
}

// ListRunVersions pages through the run's versions, newest first: the
// run itself on the first page, then the kept versions by descending
// Version. The cursor is the last Version listed, so versions kept while
// paging (all newer) appear on no later page.
func (s *stateStore) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	before := int64(math.MaxInt64)
	if page.Cursor != "" {
		n, err := strconv.ParseInt(page.Cursor, 10, 64)
		if err != nil || n <= 0 {
			return contract.RunVersionPage{}, &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this listing returned; pass \"\" or the Next of the previous page"}
		}
		before = n
	}
	// The first page gives the run itself one of its places.
	want := page.Limit
	if page.Cursor == "" {
		want--
	}
	kept, cut := s.versionBounds(s.clock.Now())
	var current *contract.Run
	var versions []contract.Run
	err := s.db.run(ctx, func(ctx context.Context, e Executor) error {
		current, versions = nil, versions[:0]
		rows, err := e.Query(ctx, s.q.runVersionsList, tenant, id, kept, cut, before, want+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var kind int
			r, err := scanRunInto(rows, &kind)
			if err != nil {
				return err
			}
			if kind == 0 {
				current = r
			} else {
				versions = append(versions, *r)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return contract.RunVersionPage{}, stateErr(err)
	}
	if current == nil {
		return contract.RunVersionPage{}, contract.ErrNotFound
	}
	out := contract.RunVersionPage{Versions: make([]contract.Run, 0, page.Limit)}
	if page.Cursor == "" {
		out.Versions = append(out.Versions, *current)
	}
	more := len(versions) > want
	if more {
		versions = versions[:want]
	}
	out.Versions = append(out.Versions, versions...)
	if more {
		out.Next = strconv.FormatInt(out.Versions[len(out.Versions)-1].Version, 10)
	}
	return out, nil
}

// GetRunVersion returns the run as it was at version: the run itself at
// its current Version, otherwise a kept version within the policy's
// bounds, or contract.ErrNotFound.
func (s *stateStore) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	kept, cut := s.versionBounds(s.clock.Now())
	var run *contract.Run
	err := s.db.run(ctx, func(ctx context.Context, e Executor) error {
		r, err := scanRun(e.QueryRow(ctx, s.q.runVersionGet, tenant, id, kept, cut, version))
		run = r
		return err
	})
	return run, stateErr(err)
}

// ForkRun creates run tenant/newID from version of run tenant/id, in one
// statement: on a store bound to a transaction (Bound) the fork commits
// or rolls back with it. contract.ErrNotFound when the version is not
// kept; a *contract.StateConflictError (Expected 0, Actual the stored
// version) when newID exists.
func (s *stateStore) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	var out *contract.Run
	err := s.db.run(ctx, func(ctx context.Context, e Executor) error {
		for range settledTries {
			now := s.clock.Now()
			kept, cut := s.versionBounds(now)
			var kind int
			r, err := scanRunInto(e.QueryRow(ctx, s.q.runFork, tenant, id, kept, cut, version, newID, now), &kind)
			switch {
			case errors.Is(err, contract.ErrNotFound):
				// The run newID that refused the insert committed after
				// the snapshot: nothing was written; try again.
				continue
			case err != nil:
				return err
			}
			switch kind {
			case 1:
				out = r
				return nil
			case 2:
				return &contract.StateConflictError{Tenant: tenant, ID: newID, Expected: 0, Actual: r.Version}
			}
			return contract.ErrNotFound
		}
		return unsettled(tenant, newID)
	})
	return out, stateErr(err)
}
