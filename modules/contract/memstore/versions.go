package memstore

import (
	"context"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Versions of runs. s.kept holds, for each run, the earlier versions its
// writes kept, oldest first (so by ascending Version and UpdatedAt). A
// version shares its Data with nothing that is ever written in place: a
// put replaces a run's Data slice, it never edits it.

// runVersions are the kept versions of one run: buf[off:], oldest first.
// Pruning moves off on; an append into a full buffer moves the versions
// back to its start first, so a run keeping N versions reuses one buffer
// instead of allocating as its history slides.
type runVersions struct {
	buf []contract.Run
	off int
}

// list returns the kept versions, oldest first (none for a nil h).
func (h *runVersions) list() []contract.Run {
	if h == nil {
		return nil
	}
	return h.buf[h.off:]
}

func (h *runVersions) add(r contract.Run) {
	if len(h.buf) == cap(h.buf) && h.off > 0 {
		n := copy(h.buf, h.buf[h.off:])
		clear(h.buf[n:])
		h.buf, h.off = h.buf[:n], 0
	}
	h.buf = append(h.buf, r)
}

// drop forgets the n oldest versions.
func (h *runVersions) drop(n int) {
	clear(h.buf[h.off : h.off+n])
	h.off += n
}

// keep records the run as it is before a write at now as one of its
// versions, when the store keeps versions, and prunes the run's versions
// past the policy's bounds.
func (s *store) keep(k runKey, r *contract.Run, now time.Time) {
	if !s.runPolicy.KeepsVersions() {
		return
	}
	h := s.kept[k]
	if h == nil {
		h = &runVersions{}
		s.kept[k] = h
	}
	h.add(*r)
	h.drop(s.prunable(h.list(), now))
}

// prunable is how many of the oldest of vs are past the policy's bounds,
// at most contract.VersionPruneBatch: what one write deletes.
func (s *store) prunable(vs []contract.Run, now time.Time) int {
	n := 0
	for n < len(vs) && n < contract.VersionPruneBatch && !s.within(vs, n, now) {
		n++
	}
	return n
}

// within reports whether vs[i] is inside the policy's bounds at now: one
// of the newest MaxKept versions, and younger than VersionAge when that is
// set. Reads show only these; the others wait for a write to prune them.
func (s *store) within(vs []contract.Run, i int, now time.Time) bool {
	if len(vs)-i > s.runPolicy.MaxKept() {
		return false
	}
	age := s.runPolicy.VersionAge
	return age <= 0 || vs[i].UpdatedAt.Add(age).After(now)
}

// version returns the run's version v within bounds (the run itself when
// v is its Version), or nil.
func (s *store) version(k runKey, r *contract.Run, v int64, now time.Time) *contract.Run {
	if v == r.Version {
		return r
	}
	vs := s.kept[k].list()
	for i := len(vs) - 1; i >= 0 && vs[i].Version >= v; i-- {
		if vs[i].Version == v && s.within(vs, i, now) {
			return &vs[i]
		}
	}
	return nil
}

// ListRunVersions pages through the run's versions newest first: the run
// itself, then its kept versions by descending Version. The cursor is the
// last Version listed, so versions kept while paging (all newer) are not
// listed, and none older is skipped.
func (s *store) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	before, err := parseVersionCursor(page.Cursor)
	if err != nil {
		return contract.RunVersionPage{}, err
	}
	if err := s.lock(ctx); err != nil {
		return contract.RunVersionPage{}, err
	}
	defer s.mu.Unlock()
	k := s.runKey(tenant, id)
	r, ok := s.runs[k]
	if !ok {
		return contract.RunVersionPage{}, contract.ErrNotFound
	}
	now := s.clock.Now()
	out := contract.RunVersionPage{Versions: []contract.Run{}}
	add := func(v *contract.Run) bool {
		if len(out.Versions) == page.Limit {
			out.Next = versionCursor(out.Versions[page.Limit-1].Version)
			return false
		}
		out.Versions = append(out.Versions, *copyRun(v))
		return true
	}
	if r.Version < before && !add(r) {
		return out, nil
	}
	vs := s.kept[k].list()
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Version >= before || !s.within(vs, i, now) {
			continue
		}
		if !add(&vs[i]) {
			break
		}
	}
	return out, nil
}

// GetRunVersion returns the run as it was at version, or
// contract.ErrNotFound when the run or that version is not kept.
func (s *store) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	k := s.runKey(tenant, id)
	r, ok := s.runs[k]
	if !ok {
		return nil, contract.ErrNotFound
	}
	v := s.version(k, r, version, s.clock.Now())
	if v == nil {
		return nil, contract.ErrNotFound
	}
	return copyRun(v), nil
}

// ForkRun creates run tenant/newID from version of run tenant/id: its
// Data, Status, Session and Counters, with Version 1, no fence, no
// versions and the next Seq.
func (s *store) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	k := s.runKey(tenant, id)
	r, ok := s.runs[k]
	if !ok {
		return nil, contract.ErrNotFound
	}
	now := s.clock.Now()
	v := s.version(k, r, version, now)
	if v == nil {
		return nil, contract.ErrNotFound
	}
	nk := s.runKey(tenant, newID)
	if taken, ok := s.runs[nk]; ok {
		return nil, &contract.StateConflictError{Tenant: tenant, ID: newID, Expected: 0, Actual: taken.Version}
	}
	forked := s.create(nk, contract.Run{Tenant: tenant, ID: newID, Session: v.Session, Status: v.Status, Data: v.Data, Counters: v.Counters}, now)
	return copyRun(forked), nil
}

// A version cursor is the last Version listed, in decimal: the next page
// lists the versions below it.

func versionCursor(v int64) string { return strconv.FormatInt(v, 10) }

// parseVersionCursor returns the Version a page lists below (the largest
// int64 for the first page).
func parseVersionCursor(c string) (int64, error) {
	if c == "" {
		return 1<<63 - 1, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n <= 0 {
		return 0, badCursor()
	}
	return n, nil
}
