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
type RedisStateStore struct {
	client   redis.UniversalClient
	clock    contract.Clock
	settings Settings
	retry    retrier
}

var _ contract.StateStore = (*RedisStateStore)(nil)

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
	return &RedisStateStore{client: client, clock: clock, settings: s, retry: r}, nil
}

// OpenState runs Preflight against the server (waiting out a failover
// under the retry budget) and returns the store if the server would not
// lose a run.
func OpenState(ctx context.Context, client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisStateStore, error) {
	st, err := NewState(client, clock, settings)
	if err != nil {
		return nil, err
	}
	err = st.retry.do(ctx, func(ctx context.Context) error {
		_, err := Preflight(ctx, client, st.settings)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Settings returns the effective settings (defaults filled in).
func (s *RedisStateStore) Settings() Settings { return s.settings }

// run calls a script under the retry budget.
func (s *RedisStateStore) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) (any, error) {
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
func (s *RedisStateStore) GetRun(ctx context.Context, tenant, id string) (*contract.Run, error) {
	if err := validateTenantID("tenant", "id", tenant, id); err != nil {
		return nil, err
	}
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

// PutRun writes the run's Session, Status and Data, version-checked. Each
// call carries a nonce, so a retry of a put whose reply was lost returns
// the run it wrote rather than a conflict with itself.
func (s *RedisStateStore) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	if err := contract.ValidateRun(run, s.settings.MaxValueBytes); err != nil {
		return nil, err
	}
	k := newStateKeys(s.settings.Namespace, run.Tenant)
	now := s.clock.Now()
	res, err := s.run(ctx, scriptStatePut,
		[]string{k.run(run.ID), k.meta(run.ID), k.index(), k.seq()},
		k.prefix, run.Version, run.ID, run.Session, run.Status, []byte(run.Data), now.UnixNano(), nonce())
	if err != nil {
		return nil, err
	}
	vals, _ := res.([]any)
	if len(vals) < 2 {
		return nil, fmt.Errorf("redisstore: unexpected put reply %v", res)
	}
	if n, _ := vals[0].(int64); n == 0 {
		actual, _ := vals[1].(int64)
		return nil, &contract.StateConflictError{Tenant: run.Tenant, ID: run.ID, Expected: run.Version, Actual: actual}
	}
	return decodeRun(run.Tenant, run.ID, vals[1:])
}

// patchReplayWindow is how long a run remembers the nonce of a patch it
// applied. A retry of that patch (its reply was lost) within the window is
// answered without adding the deltas again. Retries come within the retry
// budget plus the client's read timeouts: well under a minute.
const patchReplayWindow = 10 * time.Minute

// PatchRun adds the patch's counters and sets its status when given. Each
// call carries a nonce the run remembers for patchReplayWindow, so a retry
// of a patch whose reply was lost is not added twice.
func (s *RedisStateStore) PatchRun(ctx context.Context, tenant, id string, patch contract.Patch) (*contract.Run, error) {
	if err := validateTenantID("tenant", "id", tenant, id); err != nil {
		return nil, err
	}
	if err := contract.ValidatePatch(patch); err != nil {
		return nil, err
	}
	k := newStateKeys(s.settings.Namespace, tenant)
	c := patch.Counters
	now := s.clock.Now()
	res, err := s.run(ctx, scriptStatePatch, []string{k.run(id), k.meta(id), k.patches(id)},
		c.InputTokens, c.OutputTokens, c.CostMicros, c.Iterations, c.Cursor, patch.Status, now.UnixNano(), nonce(),
		now.UnixMilli(), patchReplayWindow.Milliseconds())
	if err != nil {
		return nil, err
	}
	vals, _ := res.([]any)
	if len(vals) == 0 {
		return nil, contract.ErrNotFound
	}
	return decodeRun(tenant, id, vals)
}

// ListRuns pages through the tenant's runs by Seq.
func (s *RedisStateStore) ListRuns(ctx context.Context, tenant string, page contract.PageRequest) (contract.RunPage, error) {
	if err := contract.ValidateName("tenant", tenant); err != nil {
		return contract.RunPage{}, err
	}
	k := newStateKeys(s.settings.Namespace, tenant)
	return s.list(ctx, tenant, k, k.index(), page)
}

// ListSessionRuns pages through the runs of one session by Seq.
func (s *RedisStateStore) ListSessionRuns(ctx context.Context, tenant, session string, page contract.PageRequest) (contract.RunPage, error) {
	if err := validateTenantID("tenant", "session", tenant, session); err != nil {
		return contract.RunPage{}, err
	}
	k := newStateKeys(s.settings.Namespace, tenant)
	return s.list(ctx, tenant, k, k.session(session), page)
}

func (s *RedisStateStore) list(ctx context.Context, tenant string, k stateKeys, index string, page contract.PageRequest) (contract.RunPage, error) {
	limit, err := contract.ValidatePage(page)
	if err != nil {
		return contract.RunPage{}, err
	}
	after, err := parseCursor(page.Cursor)
	if err != nil {
		return contract.RunPage{}, err
	}
	res, err := s.run(ctx, scriptStateList, []string{index}, k.prefix, after, limit+1)
	if err != nil {
		return contract.RunPage{}, err
	}
	rows, _ := res.([]any)
	out := contract.RunPage{Runs: make([]contract.Run, 0, min(len(rows), limit))}
	for _, row := range rows {
		vals, _ := row.([]any)
		if len(out.Runs) == limit {
			out.Next = formatCursor(out.Runs[limit-1].Seq)
			break
		}
		r, err := decodeRun(tenant, "", vals)
		if err != nil {
			return contract.RunPage{}, err
		}
		out.Runs = append(out.Runs, *r)
	}
	return out, nil
}

// DeleteRun removes the run, or returns contract.ErrNotFound.
func (s *RedisStateStore) DeleteRun(ctx context.Context, tenant, id string) error {
	if err := validateTenantID("tenant", "id", tenant, id); err != nil {
		return err
	}
	k := newStateKeys(s.settings.Namespace, tenant)
	res, err := s.run(ctx, scriptStateDelete, []string{k.run(id), k.meta(id), k.index(), k.patches(id)}, k.prefix, id)
	if err != nil {
		return err
	}
	if n, _ := res.(int64); n == 0 {
		return contract.ErrNotFound
	}
	return nil
}

func validateTenantID(tf, idf, tenant, id string) error {
	if err := contract.ValidateName(tf, tenant); err != nil {
		return err
	}
	return contract.ValidateName(idf, id)
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
