package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// RedisStateStore is a contract.StateStore kept in Redis. A run is a JSON
// string key (the blob) plus a small hash (version, the five counters, seq,
// status, session, timestamps); writes are Lua scripts so version checks
// and counter increments are atomic. Every key of a tenant shares the
// tenant's hash tag, so it works unchanged on Redis Cluster.
//
// Its state methods are the contract's front door ([contract.StateFront]),
// which checks every call before the store's driver sees it.
type RedisStateStore struct {
	contract.StateFront
	d *stateStore
}

// stateStore is the driver behind a RedisStateStore's front door.
type stateStore struct {
	client   redis.UniversalClient
	clock    contract.Clock
	settings Settings
	retry    retrier
	window   time.Duration // replayWindowFor the retry budget
}

var (
	_ contract.StateStore  = (*RedisStateStore)(nil)
	_ contract.StateDriver = (*stateStore)(nil)
)

// NewState returns a state store over client without running Preflight
// (tests and callers that checked the server themselves). A nil clock
// means the system clock.
func NewState(client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisStateStore, error) {
	s, err := settings.normalized()
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = contract.SystemClock{}
	}
	if client == nil {
		return nil, &contract.ValidationError{Field: "client", Problem: "is nil; pass a redis.UniversalClient"}
	}
	r, err := newRetrier(client, s, stateUnavailable)
	if err != nil {
		return nil, err
	}
	d := &stateStore{client: client, clock: clock, settings: s, retry: r, window: replayWindowFor(s.RetryBudget)}
	return &RedisStateStore{StateFront: contract.NewStateFront(d, s.MaxValueBytes, s.Runs), d: d}, nil
}

// OpenState runs Preflight against the server (waiting out a failover
// under the retry budget) and returns the store if the server would not
// lose a run.
func OpenState(ctx context.Context, client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisStateStore, error) {
	st, err := NewState(client, clock, settings)
	if err != nil {
		return nil, err
	}
	err = st.d.retry.do(ctx, func(ctx context.Context) error {
		_, err := Preflight(ctx, client, st.d.settings)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Settings returns the effective settings (defaults filled in).
func (s *RedisStateStore) Settings() Settings { return s.d.settings }

// run calls a script under the retry budget.
func (s *stateStore) run(ctx context.Context, sc *script, keys []string, args ...any) (any, error) {
	var res any
	err := s.retry.do(ctx, func(ctx context.Context) error {
		v, err := s.retry.eval(ctx, s.client, sc, keys, args...)
		if err == redis.Nil {
			v, err = nil, nil
		}
		res = v
		return err
	})
	return res, err
}

// GetRun returns the run, or contract.ErrNotFound.
func (s *stateStore) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	k := newStateKeys(s.settings.Namespace, tenant)
	res, err := s.run(ctx, scriptStateGet, []string{k.run(id), k.meta(id)})
	if err != nil {
		return nil, err
	}
	vals, _ := res.([]any)
	if len(vals) == 0 {
		return nil, contract.ErrNotFound
	}
	return decodeRun(tenant, id, vals)
}

// replayWindow is how long the store remembers what each write did, under
// the write's nonce, at the least: a write sent again within the window
// (its reply was lost) is answered from that record instead of running
// again. A call stops resending at half the window (see resendable), and
// the other half covers clients whose clocks disagree about when a record
// is old. A record takes about 300 bytes of the server's memory for the
// window's length (measured: BenchmarkStateWrites), so 1,000 writes a
// second keep about 90 MB.
const replayWindow = 5 * time.Minute

// replayWindowFor is the window for a retry budget: replayWindow, or more
// when the budget resends for longer, so that a call never resends after
// half of it (the budget's MaxElapsed plus a minute for the timeouts of
// its last tries; 45s by default).
func replayWindowFor(b RetryBudget) time.Duration {
	return max(replayWindow, 2*(b.MaxElapsed+time.Minute))
}

// resendable bounds a write call, its resends included, to half the
// replay window from its start: past that its record may be forgotten
// by a client whose clock runs ahead, and a resend could apply twice.
func (s *stateStore) resendable(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.window/2)
}

// sessionTries bounds the calls of a put or delete that learns the run
// is in a session other than the one whose index it declared (see
// scripts/state_put.lua): each learns the session the run has now, so a
// second call succeeds unless the session changes again in between.
const sessionTries = 4

// writeArgs are the arguments every state write script starts with (see
// scripts/state_lib.lua).
func (s *stateStore) writeArgs(id string, now time.Time, run string, more ...any) []any {
	return append([]any{id, now.UnixMilli(), now.Add(-s.window).UnixMilli(), run}, more...)
}

// writeKeys are the keys every state write script starts with.
func writeKeys(k stateKeys, id string, more ...string) []string {
	return append([]string{k.run(id), k.meta(id), k.replays(), k.outcomes()}, more...)
}

// write runs a state write script under the retry budget and splits its
// reply into its status and the rest.
func (s *stateStore) write(ctx context.Context, sc *script, keys []string, args ...any) (int64, []any, error) {
	res, err := s.run(ctx, sc, keys, args...)
	if err != nil {
		return 0, nil, err
	}
	return writeReply(res)
}

// writeReply splits a write script's reply into its status and the rest.
func writeReply(res any) (int64, []any, error) {
	vals, _ := res.([]any)
	if len(vals) == 0 {
		return 0, nil, fmt.Errorf("redisstore: malformed state reply %v", res)
	}
	status, ok := vals[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("redisstore: malformed state reply %v", res)
	}
	return status, vals[1:], nil
}

func replyString(vals []any) string {
	if len(vals) == 0 {
		return ""
	}
	s, _ := vals[0].(string)
	return s
}

// Statuses of the state write scripts' replies.
const (
	replyMissing  = 0 // not found (a delete or patch); a conflict (a put)
	replyDone     = 1 // written, by this call or an earlier try of it
	replySession  = 2 // the run is in another session: call again declaring its index
	replyOverflow = 3 // a counter would leave the int64 range
	replyFenced   = 4 // the run's fence is above the write's: nothing written
)

// staleFence is the refusal of a write under fence by a run whose fence,
// the first of vals, is above it.
func staleFence(tenant, id string, fence int64, vals []any) error {
	return &contract.StaleFenceError{Tenant: tenant, ID: id, Fence: fence, Stored: atoi64(replyString(vals))}
}

// PutRun writes the run's Session, Status and Data, version-checked. Each
// call carries a nonce, so a put sent again after its reply was lost
// answers with the run it wrote rather than a conflict with itself.
func (s *stateStore) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	ctx, cancel := s.resendable(ctx)
	defer cancel()
	k := newStateKeys(s.settings.Namespace, run.Tenant)
	now, id := s.clock.Now(), nonce()
	// Most puts keep the run's session: guess that it is the stored one.
	stored := run.Session
	for range sessionTries {
		status, vals, err := s.write(ctx, scriptStatePut,
			writeKeys(k, run.ID, k.index(), k.seq(), k.session(run.Session), k.session(stored), k.versions(run.ID), k.vdata(run.ID)),
			s.writeArgs(id, now, run.ID, run.Version, run.Session, stored, run.Status, []byte(run.Data), now.UnixNano(), run.Fence,
				s.keep(), s.cutoff(now))...)
		switch {
		case err != nil:
			return nil, err
		case status == replyDone:
			return decodeRun(run.Tenant, run.ID, vals)
		case status == replyFenced:
			return nil, staleFence(run.Tenant, run.ID, run.Fence, vals)
		case status == replyMissing:
			return nil, &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version, Actual: atoi64(replyString(vals))}
		case status == replySession:
			stored = replyString(vals)
			continue
		}
		return nil, fmt.Errorf("redisstore: unexpected put reply %d %v", status, vals)
	}
	return nil, sessionMoving(run.Tenant, run.ID)
}

func sessionMoving(tenant, id string) error {
	return stateUnavailable(fmt.Errorf("run %q/%q moved between sessions under %d tries; nothing was written", tenant, id, sessionTries))
}

// PatchRun adds the patch's counters and sets its status when given. Each
// call carries a nonce the tenant remembers for replayWindow, so a patch
// sent again after its reply was lost is not added twice, and is answered
// even if the run was deleted meanwhile. All five sums are checked before
// any is written: a patch that would overflow one is refused whole.
func (s *stateStore) PatchRun(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	ctx, cancel := s.resendable(ctx)
	defer cancel()
	k := newStateKeys(s.settings.Namespace, tenant)
	c := patch.Counters
	deltas := [5]int64{c.InputTokens, c.OutputTokens, c.CostMicros, c.Iterations, c.Cursor}
	now := s.clock.Now()
	status, vals, err := s.write(ctx, scriptStatePatch, writeKeys(k, id, k.versions(id), k.vdata(id)),
		s.writeArgs(nonce(), now, id, deltas[0], deltas[1], deltas[2], deltas[3], deltas[4], patch.Status, now.UnixNano(), patch.Fence,
			s.keep(), s.cutoff(now))...)
	switch {
	case err != nil:
		return nil, err
	case status == replyDone:
		return decodeRun(tenant, id, vals)
	case status == replyFenced:
		return nil, staleFence(tenant, id, patch.Fence, vals)
	case status == replyMissing:
		return nil, contract.ErrNotFound
	case status == replyOverflow && len(vals) == 2:
		if n, _ := vals[0].(int64); n >= 1 && n <= 5 {
			stored, _ := vals[1].(string)
			return nil, &contract.CounterOverflowError{Tenant: tenant, ID: id, Counter: contract.CounterName(int(n - 1)), Stored: atoi64(stored), Delta: deltas[n-1]}
		}
	}
	return nil, fmt.Errorf("redisstore: unexpected patch reply %d %v", status, vals)
}

// ListRuns pages through the tenant's runs by Seq.
func (s *stateStore) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	k := newStateKeys(s.settings.Namespace, tenant)
	return s.list(ctx, tenant, k, k.index(), page)
}

// ListSessionRuns pages through the runs of one session by Seq.
func (s *stateStore) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	k := newStateKeys(s.settings.Namespace, tenant)
	return s.list(ctx, tenant, k, k.session(session), page)
}

// list reads a page in two steps: the ids after the cursor from the
// index, then those runs by a script that declares their keys (so Redis
// Cluster routes and checks all of them, mid-migration too). A run
// deleted between the steps is skipped and the next ids are read in its
// place, so a page short of the limit is still the last.
func (s *stateStore) list(ctx context.Context, tenant string, k stateKeys, index string, page contract.PageRequest) (contract.RunPage, error) {
	limit := page.Limit
	after, err := parseCursor(page.Cursor)
	if err != nil {
		return contract.RunPage{}, err
	}
	out := contract.RunPage{Runs: make([]contract.Run, 0, limit)}
	for len(out.Runs) <= limit {
		want := limit + 1 - len(out.Runs)
		var ids []redis.Z
		err := s.retry.do(ctx, func(ctx context.Context) error {
			var err error
			ids, err = s.client.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: index, ByScore: true,
				Start: "(" + strconv.FormatInt(after, 10), Stop: "+inf", Count: int64(want)}).Result()
			return err
		})
		if err != nil || len(ids) == 0 {
			if err != nil {
				return contract.RunPage{}, err
			}
			break
		}
		keys := make([]string, 0, 2*len(ids))
		for _, z := range ids {
			id, _ := z.Member.(string)
			keys = append(keys, k.meta(id), k.run(id))
		}
		res, err := s.run(ctx, scriptStateList, keys)
		if err != nil {
			return contract.RunPage{}, err
		}
		rows, _ := res.([]any)
		for i, z := range ids {
			after = int64(z.Score)
			if i >= len(rows) {
				break
			}
			vals, _ := rows[i].([]any)
			if len(vals) == 0 {
				continue // deleted since the index was read
			}
			id, _ := z.Member.(string)
			r, err := decodeRun(tenant, id, vals)
			if err != nil {
				return contract.RunPage{}, err
			}
			out.Runs = append(out.Runs, *r)
		}
		if len(ids) < want {
			break // the index has no more
		}
	}
	if len(out.Runs) > limit {
		out.Runs = out.Runs[:limit]
		out.Next = formatCursor(out.Runs[limit-1].Seq)
	}
	return out, nil
}

// DeleteRun removes the run, or returns contract.ErrNotFound. A delete
// sent again after its reply was lost finds its record (which outlives
// the run) and answers nil, and does not remove a run created meanwhile.
func (s *stateStore) DeleteRun(ctx context.Context, tenant, id string) error {
	return s.deleteRun(ctx, tenant, id, 0)
}

// DeleteRunFenced is DeleteRun under fence: a run whose fence is above it
// is left as it is, and the call answers a *contract.StaleFenceError.
func (s *stateStore) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	return s.deleteRun(ctx, tenant, id, fence)
}

func (s *stateStore) deleteRun(ctx context.Context, tenant, id string, fence int64) error {
	ctx, cancel := s.resendable(ctx)
	defer cancel()
	k := newStateKeys(s.settings.Namespace, tenant)
	now, n := s.clock.Now(), nonce()
	// The run's session is not known here; most runs have none. A run in
	// a session costs a second call, which declares the session's index.
	session := ""
	for range sessionTries {
		status, vals, err := s.write(ctx, scriptStateDelete, writeKeys(k, id, k.index(), k.patches(id), k.session(session), k.versions(id), k.vdata(id)),
			s.writeArgs(n, now, id, session, fence)...)
		switch {
		case err != nil:
			return err
		case status == replyDone:
			return nil
		case status == replyFenced:
			return staleFence(tenant, id, fence, vals)
		case status == replyMissing:
			return contract.ErrNotFound
		case status == replySession:
			session = replyString(vals)
			continue
		}
		return fmt.Errorf("redisstore: unexpected delete reply %d %v", status, vals)
	}
	return sessionMoving(tenant, id)
}

// decodeRun reads a script reply: hash fields and values, then the blob.
func decodeRun(tenant, id string, vals []any) (*contract.Run, error) {
	if len(vals)%2 != 1 {
		return nil, fmt.Errorf("redisstore: malformed run reply (%d values)", len(vals))
	}
	r := &contract.Run{Tenant: tenant, ID: id}
	for i := 0; i+1 < len(vals); i += 2 {
		f, _ := vals[i].(string)
		v, _ := vals[i+1].(string)
		switch f {
		case "id":
			r.ID = v
		case "st":
			r.Status = v
		case "se":
			r.Session = v
		case "v":
			r.Version = atoi64(v)
		case "seq":
			r.Seq = atoi64(v)
		case "f":
			r.Fence = atoi64(v)
		case "it":
			r.Counters.InputTokens = atoi64(v)
		case "ot":
			r.Counters.OutputTokens = atoi64(v)
		case "c":
			r.Counters.CostMicros = atoi64(v)
		case "i":
			r.Counters.Iterations = atoi64(v)
		case "cur":
			r.Counters.Cursor = atoi64(v)
		case "ca":
			r.CreatedAt = nsTime(v)
		case "ua":
			r.UpdatedAt = nsTime(v)
		}
	}
	if data, _ := vals[len(vals)-1].(string); data != "" {
		r.Data = json.RawMessage(data)
	}
	return r, nil
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// nsTime turns a stored unix-nanosecond string back into a UTC time; ""
// or "0" is the zero time.
func nsTime(s string) time.Time {
	n := atoi64(s)
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func parseCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(c, 36, 64)
	if err != nil || n < 0 {
		return 0, &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this store returned; pass the Next of the previous page"}
	}
	return n, nil
}

func formatCursor(n int64) string { return strconv.FormatInt(n, 36) }
