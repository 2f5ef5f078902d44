package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// The versions of a run are two keys of its own, in its tenant's slot
// (see scripts/state_versions_lib.lua), so every state script, the ones
// that keep, prune, list and fork versions included, stays in one slot.
func (k stateKeys) versions(id string) string { return k.prefix + "versions:" + lp(id) }
func (k stateKeys) vdata(id string) string    { return k.prefix + "vdata:" + lp(id) }

var _ contract.RunKeeper = (*stateStore)(nil)

// replyTaken is a fork's reply when its new id is a run already.
const replyTaken = 5

// keep is how many earlier versions of a run the store keeps (0: none).
func (s *stateStore) keep() int { return s.settings.Runs.MaxKept() }

// cutoff is the time (unix ns, decimal) at or before which a version is
// too old to keep at now, "" when the store keeps versions of any age.
func (s *stateStore) cutoff(now time.Time) string {
	if s.settings.Runs.VersionAge <= 0 {
		return ""
	}
	return strconv.FormatInt(now.Add(-s.settings.Runs.VersionAge).UnixNano(), 10)
}

func versionKeys(k stateKeys, id string) []string {
	return []string{k.run(id), k.meta(id), k.versions(id), k.vdata(id)}
}

// GetRunVersion returns the run as it was at version: the run itself
// when version is its current one, else the version when it is still
// kept, or contract.ErrNotFound.
func (s *stateStore) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	k := newStateKeys(s.settings.Namespace, tenant)
	res, err := s.run(ctx, scriptVersionGet, versionKeys(k, id), version, s.keep(), s.cutoff(s.clock.Now()))
	if err != nil {
		return nil, err
	}
	status, vals, err := writeReply(res)
	switch {
	case err != nil:
		return nil, err
	case status == 0:
		return nil, contract.ErrNotFound
	}
	return decodeRun(tenant, id, vals)
}

// ListRunVersions pages through a run's versions, newest first: the run
// as it is, then the kept ones by descending version. The cursor is the
// last version listed (decimal): a page lists only versions below it, so
// a version kept while paging (it is newer) appears on no later page.
func (s *stateStore) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	if page.Cursor != "" {
		if n, err := strconv.ParseInt(page.Cursor, 10, 64); err != nil || n <= 0 {
			return contract.RunVersionPage{}, &contract.ValidationError{Field: "PageRequest.Cursor",
				Problem: "is not a cursor of this run's versions; pass the Next of the previous page, or \"\" for the first"}
		}
	}
	k := newStateKeys(s.settings.Namespace, tenant)
	res, err := s.run(ctx, scriptVersionList, versionKeys(k, id), page.Cursor, page.Limit, s.keep(), s.cutoff(s.clock.Now()))
	if err != nil {
		return contract.RunVersionPage{}, err
	}
	status, vals, err := writeReply(res)
	switch {
	case err != nil:
		return contract.RunVersionPage{}, err
	case status == 0:
		return contract.RunVersionPage{}, contract.ErrNotFound
	case len(vals) == 0:
		return contract.RunVersionPage{}, fmt.Errorf("redisstore: malformed versions reply %v", res)
	}
	more, _ := vals[0].(int64)
	out := contract.RunVersionPage{Versions: make([]contract.Run, 0, len(vals)-1)}
	for _, v := range vals[1:] {
		entry, _ := v.([]any)
		r, err := decodeRun(tenant, id, entry)
		if err != nil {
			return contract.RunVersionPage{}, err
		}
		out.Versions = append(out.Versions, *r)
	}
	if more == 1 && len(out.Versions) > 0 {
		out.Next = strconv.FormatInt(out.Versions[len(out.Versions)-1].Version, 10)
	}
	return out, nil
}

// ForkRun creates run tenant/newID from version of run tenant/id. Like a
// put that creates, each call carries a nonce, so a fork sent again after
// its reply was lost answers with the run it made rather than a conflict
// with it.
func (s *stateStore) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	ctx, cancel := s.resendable(ctx)
	defer cancel()
	k := newStateKeys(s.settings.Namespace, tenant)
	now, n := s.clock.Now(), nonce()
	// Most runs are in no session: guess that the version is in none.
	session := ""
	for range sessionTries {
		status, vals, err := s.write(ctx, scriptStateFork,
			writeKeys(k, newID, k.index(), k.seq(), k.session(session), k.run(id), k.meta(id), k.versions(id), k.vdata(id)),
			s.writeArgs(n, now, newID, version, session, s.keep(), s.cutoff(now), now.UnixNano())...)
		switch {
		case err != nil:
			return nil, err
		case status == replyDone:
			return decodeRun(tenant, newID, vals)
		case status == replyMissing:
			return nil, contract.ErrNotFound
		case status == replyTaken:
			return nil, &contract.StateConflictError{Tenant: tenant, ID: newID, Expected: 0, Actual: atoi64(replyString(vals))}
		case status == replySession:
			session = replyString(vals)
			continue
		}
		return nil, fmt.Errorf("redisstore: unexpected fork reply %d %v", status, vals)
	}
	return nil, sessionMoving(tenant, id)
}
