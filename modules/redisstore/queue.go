package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"github.com/redis/go-redis/v9"
)

// RedisWorkQueue is a contract.WorkQueue kept in Redis. All queues of one
// namespace share the namespace's hash tag (one cluster slot), because a
// claim reads several tenants' ready items in one script to take turns
// between them, unless Settings.Shards spreads them over several.
//
// Every state change is a Lua script (Reap is two: a read-only scan, then
// a fenced write). A script whose reply is lost to a dropped connection is
// retried within the RetryBudget, and the writes carry nonces so a retry
// replays the first outcome: a retried Claim gets the same leases back.
// Only a retried Complete differs: it names an item the first try
// completed as lost (it is gone either way).
//
// Its queue methods are the contract's front door ([contract.QueueFront]),
// which checks every call before the queue's driver sees it.
//
// With Settings.Shards above one, every queue of the namespace is spread
// over that many hash tags (see shardedQueue), so on a Redis Cluster it
// is served by as many masters.
type RedisWorkQueue struct {
	contract.QueueFront
	d      *workQueue   // the first shard (the only one unless sharded)
	shards []*workQueue // every shard, in shard order
	sh     *shardedQueue
}

// workQueue is the driver behind a RedisWorkQueue's front door: it is
// called only with input the front has checked and normalised.
type workQueue struct {
	client   redis.UniversalClient
	clock    contract.Clock
	settings Settings
	policy   policy.Policy
	keys     queueKeys
	retry    retrier

	wakes    atomic.Int64
	lastWake atomic.Int64 // unix ns

	subMu sync.Mutex
	subs  map[string]*wakeHub

	keyMu   sync.Mutex
	keyList map[string][]string // queue name -> the keys its scripts declare
}

var (
	_ contract.WorkQueue   = (*RedisWorkQueue)(nil)
	_ contract.Inspector   = (*RedisWorkQueue)(nil)
	_ contract.Waker       = (*RedisWorkQueue)(nil)
	_ contract.StatsSource = (*RedisWorkQueue)(nil)

	_ contract.CompleteClaimer = (*RedisWorkQueue)(nil)
	_ contract.FlowController  = (*RedisWorkQueue)(nil)
	_ contract.QueueDriver     = (*workQueue)(nil)
	_ contract.FlowController  = (*workQueue)(nil)
)

// NewQueue returns a work queue over client without running Preflight.
// The retry policy is settings.Policy. A nil clock means the system clock.
func NewQueue(client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisWorkQueue, error) {
	s, err := settings.normalized()
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, &contract.ValidationError{Field: "client", Problem: "is nil; pass a redis.UniversalClient"}
	}
	if clock == nil {
		clock = contract.SystemClock{}
	}
	r, err := newRetrier(client, s, queueUnavailable)
	if err != nil {
		return nil, err
	}
	shards := make([]*workQueue, s.Shards)
	for i := range shards {
		shards[i] = &workQueue{client: client, clock: clock, settings: s, policy: s.Policy,
			keys:  shardQueueKeys(s.Namespace, i, s.Shards),
			retry: r,
			subs:  map[string]*wakeHub{}, keyList: map[string][]string{}}
	}
	q := &RedisWorkQueue{d: shards[0], shards: shards}
	if len(shards) == 1 {
		q.QueueFront = contract.NewQueueFront(q.d, s.MaxValueBytes, "redis")
	} else {
		q.sh = newShardedQueue(shards)
		q.QueueFront = contract.NewQueueFront(q.sh, s.MaxValueBytes, "redis")
	}
	return q, nil
}

// OpenQueue runs Preflight against the server (waiting out a failover
// under the retry budget) and returns the queue if the server would not
// lose an item.
func OpenQueue(ctx context.Context, client redis.UniversalClient, clock contract.Clock, settings Settings) (*RedisWorkQueue, error) {
	q, err := NewQueue(client, clock, settings)
	if err != nil {
		return nil, err
	}
	err = q.d.retry.do(ctx, func(ctx context.Context) error {
		_, err := Preflight(ctx, client, q.d.settings)
		return err
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Settings returns the effective settings (defaults filled in).
func (q *RedisWorkQueue) Settings() Settings { return q.d.settings }

// queueKeys returns the keys every script of queue name declares (see
// queueKeySuffixes), built once per queue.
func (q *workQueue) queueKeys(name string) []string {
	q.keyMu.Lock()
	defer q.keyMu.Unlock()
	ks, ok := q.keyList[name]
	if !ok {
		ks = q.keys.list(name)
		if len(q.keyList) < 1024 { // a bound for a process that names queues without end
			q.keyList[name] = ks
		}
	}
	return ks
}

// run runs a queue script with keys under the retry budget.
func (q *workQueue) run(ctx context.Context, sc *script, keys []string, args ...any) (any, error) {
	var res any
	err := q.retry.do(ctx, func(ctx context.Context) error {
		v, err := q.retry.eval(ctx, q.client, sc, keys, args...)
		if err == redis.Nil {
			v, err = nil, nil
		}
		res = v
		return err
	})
	return res, err
}

// micros is t as unix microseconds, rounded up so that an item is never
// due before its time.
func micros(t time.Time) string {
	ns := t.UnixNano()
	us := ns / 1000
	if ns%1000 > 0 {
		us++
	}
	return strconv.FormatInt(us, 10)
}

// dueMicros is the ready-set score of an item due at at, read at now: the
// floor of now when at is not later (so "due now" compares due against
// the same now), else at rounded up.
func dueMicros(at, now time.Time) string {
	if !at.After(now) {
		return nowMicros(now)
	}
	return micros(at)
}

// nowMicros is t as unix microseconds, rounded down.
func nowMicros(t time.Time) string { return strconv.FormatInt(t.UnixNano()/1000, 10) }

// dueHex is dueMicros as the 16 hex digits of ready members.
func dueHex(at, now time.Time) string {
	us := now.UnixNano() / 1000
	if at.After(now) {
		us = at.UnixNano() / 1000
		if at.UnixNano()%1000 > 0 {
			us++
		}
	}
	return hex16(max(us, 0))
}

// nextMicrosHex is now+1us (rounded down) as 16 hex digits: the end,
// exclusive, of a tenant's due items in the ready set.
func nextMicrosHex(now time.Time) string { return hex16(max(now.UnixNano()/1000+1, 0)) }

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// Enqueue adds the items. Items of one queue go in one script call per
// chunk (500 items or 8 MiB), each chunk atomic; an item whose ID is
// queued, leased, waiting, dead or cancelled, or completed within its
// uniqueness window, is left as it is, so a retried call is harmless.
func (q *workQueue) Enqueue(ctx context.Context, items ...contract.Item) error {
	_, err := q.enqueue(ctx, items, false)
	return err
}

// enqueue is Enqueue, returning what each item's enqueue did when report
// is set.
func (q *workQueue) enqueue(ctx context.Context, items []contract.Item, report bool) ([]contract.EnqueueResult, error) {
	now := q.clock.Now()
	byQueue := map[string][]any{}
	at := map[string][]int{} // the positions in items of each queue's pending args
	unique := map[string]bool{}
	var out []contract.EnqueueResult
	if report {
		out = make([]contract.EnqueueResult, len(items))
	}
	var order []string
	sizes := map[string]int{}
	flush := func(name string) error {
		args := byQueue[name]
		if len(args) == 0 {
			return nil
		}
		u := "0"
		if unique[name] {
			u = "1"
		}
		head := []any{nowMicros(now), nanos(now), wakeChannel(q.settings.Namespace, name), name, u}
		res, err := q.run(ctx, scriptEnqueue, q.queueKeys(name), append(head, args...)...)
		if err != nil {
			return err
		}
		if report {
			rows, _ := res.([]any)
			for k, i := range at[name] {
				if k < len(rows) {
					s, _ := rows[k].(string)
					out[i] = enqueueResult(s)
				}
			}
		}
		byQueue[name], at[name] = nil, nil
		sizes[name], unique[name] = 0, false
		return nil
	}
	ea := nanos(now)
	for i, it := range items {
		name := it.Queue
		if _, ok := byQueue[name]; !ok {
			order = append(order, name)
		}
		md := ""
		if len(it.Metadata) > 0 {
			b, err := json.Marshal(it.Metadata)
			if err != nil {
				return nil, fmt.Errorf("redisstore: metadata: %w", err)
			}
			md = string(b)
		}
		nb := ""
		if !it.NotBefore.IsZero() {
			nb = nanos(it.NotBefore)
		}
		// The record is encoded here up to its last field, the ready
		// member, which needs the sequence number the script draws.
		ref := itemRef(it.Tenant, it.ID)
		head := record{fState: "q", fAttempts: "0", fNotBefore: nb, fEnqueuedAt: ea, fTenant: it.Tenant, fID: it.ID, fMetadata: md, fPayload: string(it.Payload)}
		rec := head.encodeHead()
		var x ext
		if it.Priority != 0 {
			x.priority = strconv.Itoa(it.Priority)
		}
		if it.UniqueFor > 0 {
			x.uniqueFor = strconv.FormatInt(int64((it.UniqueFor+time.Microsecond-1)/time.Microsecond), 10)
			unique[name] = true
		}
		xs := ""
		if x != (ext{}) {
			xs = x.encode()
		}
		byQueue[name] = append(byQueue[name], it.Tenant, ref, rec, dueMicros(it.NotBefore, now), dueHex(it.NotBefore, now), xs, nb)
		at[name] = append(at[name], i)
		sizes[name] += len(rec)
		if len(byQueue[name]) >= 500*7 || sizes[name] >= 8<<20 {
			if err := flush(name); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range order {
		if err := flush(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// enqueueResult decodes one item's reply of the enqueue script.
func enqueueResult(s string) contract.EnqueueResult {
	switch {
	case s == "n" || s == "":
		return contract.EnqueueResult{}
	case s[0] == 'k':
		return contract.EnqueueResult{Duplicate: true, State: contract.StateCompleted, UniqueUntil: usTime(s[1:])}
	}
	return contract.EnqueueResult{Duplicate: true, State: stateOfLetter(s)}
}

var _ contract.CompleteClaimer = (*RedisWorkQueue)(nil)

// Claim leases up to req.Max due items in tenant rotation, in one script
// call whatever the number of tenants.
func (q *workQueue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	ls, _, err := q.claim(ctx, req, false)
	return ls, err
}

// shardCount is what a shard's claim reads of the shard once it has
// claimed (shardHeads in shard_lib.lua): its tenants with due work in the
// order its next claim serves them, the paused ones among them, and when
// the next delayed tenant or wait falls due (unix us, -1 for none).
type shardCount struct {
	heads  []string
	paused map[string]bool
	dueAt  int64
}

// claim is Claim, with the shard's tenant counts when counted (a shard of
// a sharded queue claiming its share).
func (q *workQueue) claim(ctx context.Context, req contract.ClaimRequest, counted bool) ([]contract.Lease, shardCount, error) {
	name := req.Queue
	now := q.clock.Now()
	exp := now.Add(req.LeaseFor)
	report := contract.ClaimReportFrom(ctx)
	sc := scriptClaim
	if counted {
		sc = scriptShardClaim
	}
	res, err := q.run(ctx, sc, q.queueKeys(name), nowMicros(now), nextMicrosHex(now), nanos(now),
		nowMicros(exp), nanos(exp), req.Worker, req.Max, q.settings.RecentTurns, nonce(), reportArg(report))
	if err != nil {
		return nil, shardCount{}, err
	}
	var cnt shardCount
	if counted {
		if res, cnt, err = splitCounted(res); err != nil {
			return nil, cnt, err
		}
	}
	rows, _ := res.([]any)
	rows = noteHeld(rows, report)
	if len(rows) == 0 || notePaused(rows, report) {
		return nil, cnt, contract.ErrEmpty
	}
	ls, err := claimedLeases(rows, name, req.Worker, exp)
	return ls, cnt, err
}

// splitCounted takes a counted reply apart: the script's own reply and
// the shard's counts.
func splitCounted(res any) (any, shardCount, error) {
	parts, _ := res.([]any)
	if len(parts) != 2 {
		return nil, shardCount{}, errMalformed("counted claim")
	}
	cnt, err := parseCount(parts[1])
	return parts[0], cnt, err
}

// parseCount reads a reply of shardHeads (shard_lib.lua).
func parseCount(v any) (shardCount, error) {
	parts, _ := v.([]any)
	if len(parts) != 3 {
		return shardCount{}, errMalformed("shard tenants")
	}
	vs, _ := parts[0].([]any)
	ps, _ := parts[1].([]any)
	at, _ := parts[2].(string)
	c := shardCount{heads: make([]string, 0, len(vs)), dueAt: -1}
	if f, err := strconv.ParseFloat(at, 64); err == nil && f >= 0 {
		c.dueAt = int64(f)
	}
	for j, v := range vs {
		t, _ := v.(string)
		c.heads = append(c.heads, t)
		if j < len(ps) {
			if n, _ := ps[j].(int64); n == 1 {
				if c.paused == nil {
					c.paused = map[string]bool{}
				}
				c.paused[t] = true
			}
		}
	}
	return c, nil
}

// claimedLeases turns a claim reply (the batch's token, then the records)
// into leases of queue name held by worker until exp.
func claimedLeases(rows []any, name, worker string, exp time.Time) ([]contract.Lease, error) {
	if len(rows) < 2 {
		return nil, fmt.Errorf("redisstore: malformed claim reply")
	}
	tok, _ := rows[0].(int64)
	out := make([]contract.Lease, 0, len(rows)-1)
	for _, row := range rows[1:] {
		raw, _ := row.(string)
		rec, ok := parseRecord(raw)
		if !ok {
			return nil, fmt.Errorf("redisstore: malformed item record in claim reply")
		}
		it := rec.item(name)
		it.State = contract.StateLeased
		out = append(out, contract.Lease{Item: it, Worker: worker, ExpiresAt: exp, Token: tok})
	}
	return out, nil
}

// completeArgs appends leases to keys and args in the groups the
// complete script reads (per queue its twelve keys; the count, the
// queue's wake channel, then ref, token and ID index member per lease)
// and returns the position of each script argument's lease in leases:
// the script names lost leases by their 1-based place in the groups.
func (q *workQueue) completeArgs(keys []string, args []any, leases []contract.Lease) ([]string, []any, []int) {
	byQueue := map[string][]int{}
	var names []string
	for i, l := range leases {
		name := l.Item.Queue
		if _, ok := byQueue[name]; !ok {
			names = append(names, name)
		}
		byQueue[name] = append(byQueue[name], i)
	}
	order := make([]int, 0, len(leases))
	for _, name := range names {
		idx := byQueue[name]
		keys = append(keys, q.keys.completeKeys(name)...)
		args = append(args, len(idx), wakeChannel(q.settings.Namespace, name))
		for _, i := range idx {
			l := leases[i]
			args = append(args, itemRef(l.Item.Tenant, l.Item.ID), l.Token, idMember(l.Item.Tenant, l.Item.ID))
		}
		order = append(order, idx...)
	}
	return keys, args, order
}

// settledLeases maps the positions of a complete script reply back to
// the keys of leases (in the order of leases), through the order
// completeArgs returned: the lost (positive positions) and the cancelled
// (negated ones).
func settledLeases(reply any, leases []contract.Lease, order []int) (lost, cancelled []contract.ItemKey) {
	var at, cat []int
	idx, _ := reply.([]any)
	for _, v := range idx {
		n, _ := v.(int64)
		switch {
		case n >= 1 && int(n) <= len(order):
			at = append(at, order[n-1])
		case n <= -1 && int(-n) <= len(order):
			cat = append(cat, order[-n-1])
		}
	}
	slices.Sort(at)
	slices.Sort(cat)
	for _, i := range at {
		lost = append(lost, leases[i].Key())
	}
	for _, i := range cat {
		cancelled = append(cancelled, leases[i].Key())
	}
	return lost, cancelled
}

// CompleteAndClaim completes done as Complete does and claims as Claim
// does with req, in one script call (done beyond 1000 leases goes ahead
// through Complete). A req.Max of 0 only completes and then returns nil
// leases and a nil error unless some of done were lost. Leases claimed are
// returned even when some of done were lost; the error is then a
// *contract.LeaseLostError naming those. A retry after a lost reply
// neither completes again (so nothing completed is reported lost) nor
// claims more.
func (q *workQueue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	return q.completeAndClaim(ctx, done, req, nonce())
}

func (q *workQueue) completeAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest, id string) ([]contract.Lease, error) {
	ls, _, err := q.completeAndClaimCounted(ctx, done, req, id, false)
	return ls, err
}

// completeAndClaimCounted is completeAndClaim, with the shard's tenant
// counts when counted.
func (q *workQueue) completeAndClaimCounted(ctx context.Context, done []contract.Lease, req contract.ClaimRequest, id string, counted bool) ([]contract.Lease, shardCount, error) {
	// With Max 0 only the queue's keys are used: the script still routes
	// by them.
	var lost, early []contract.ItemKey
	if len(done) > 1000 {
		err := q.Complete(ctx, done[:len(done)-1000]...)
		var lle *contract.LeaseLostError
		var ce *contract.CancelledError
		if errors.As(err, &ce) {
			early = ce.Items
		}
		if errors.As(err, &lle) {
			lost = append(lost, lle.Items...)
		} else if err != nil && ce == nil {
			return nil, shardCount{}, err
		}
		done = done[len(done)-1000:]
	}
	name := req.Queue
	now := q.clock.Now()
	exp := now.Add(req.LeaseFor)
	report := contract.ClaimReportFrom(ctx)
	args := make([]any, 0, 12+2*len(done))
	args = append(args, nowMicros(now), nextMicrosHex(now), nanos(now),
		nowMicros(exp), nanos(exp), req.Worker, req.Max, q.settings.RecentTurns, id, reportArg(report))
	keys := append(make([]string, 0, nQueueKeys+nCompleteKeys), q.queueKeys(name)...)
	keys, args, order := q.completeArgs(keys, args, done)
	sc := scriptCompleteClaim
	if counted {
		sc = scriptShardCompleteClaim
	}
	res, err := q.run(ctx, sc, keys, args...)
	if err != nil {
		return nil, shardCount{}, err
	}
	var cnt shardCount
	if counted {
		if res, cnt, err = splitCounted(res); err != nil {
			return nil, cnt, err
		}
	}
	parts, _ := res.([]any)
	if len(parts) != 2 {
		return nil, cnt, fmt.Errorf("redisstore: malformed complete-and-claim reply")
	}
	more, cancelled := settledLeases(parts[0], done, order)
	lost = append(lost, more...)
	cancelled = append(early, cancelled...)
	rows, _ := parts[1].([]any)
	rows = noteHeld(rows, report)
	var out []contract.Lease
	if len(rows) > 0 && !notePaused(rows, report) {
		if out, err = claimedLeases(rows, name, req.Worker, exp); err != nil {
			return nil, cnt, err
		}
	}
	switch {
	case lost != nil || cancelled != nil:
		return out, cnt, contract.SettleError(lost, cancelled)
	case len(out) == 0 && req.Max != 0:
		return nil, cnt, contract.ErrEmpty
	}
	return out, cnt, nil
}

// Heartbeat extends a live lease to now+extend under a new token. A retry
// of a heartbeat whose reply was lost gets the token the first try set.
func (q *workQueue) Heartbeat(ctx context.Context, l contract.Lease, extend time.Duration) (contract.Lease, error) {
	name := l.Item.Queue
	now := q.clock.Now()
	exp := now.Add(extend)
	res, err := q.run(ctx, scriptHeartbeat, q.queueKeys(name), itemRef(l.Item.Tenant, l.Item.ID),
		l.Token, nowMicros(now), nowMicros(exp), nanos(exp), nonce())
	if err != nil {
		return contract.Lease{}, err
	}
	tok, _ := res.(int64)
	switch {
	case tok == -2:
		return contract.Lease{}, &contract.CancelledError{Items: []contract.ItemKey{l.Key()}}
	case tok < 0:
		return contract.Lease{}, &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
	}
	l.Token = tok
	l.ExpiresAt = exp
	l.Item.Queue = name
	return l, nil
}

// Complete removes the items of the leases whose tokens still match, in
// one script call per 1000 leases; the others are named in a
// *contract.LeaseLostError.
func (q *workQueue) Complete(ctx context.Context, leases ...contract.Lease) error {
	var lost, cancelled []contract.ItemKey
	for start := 0; start < len(leases); start += 1000 {
		chunk := leases[start:min(start+1000, len(leases))]
		now := q.clock.Now()
		keys, args, order := q.completeArgs(make([]string, 0, nCompleteKeys), append(make([]any, 0, 5+3*len(chunk)),
			nowMicros(now), nextMicrosHex(now), nanos(now)), chunk)
		res, err := q.run(ctx, scriptComplete, keys, args...)
		if err != nil {
			return err
		}
		l, c := settledLeases(res, chunk, order)
		lost, cancelled = append(lost, l...), append(cancelled, c...)
	}
	return contract.SettleError(lost, cancelled)
}

// Fail records cause against the lease and retries or dead-letters the
// item as the policy decides. The decision is made here (the policy's
// jitter source is the caller's) and written by a script fenced on the
// token.
func (q *workQueue) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	name := l.Item.Queue
	ref := itemRef(l.Item.Tenant, l.Item.ID)
	attempts := l.Item.Attempts
	id := nonce()
	for range 4 {
		now := q.clock.Now()
		d := q.policy.Decide(attempts+1, cause, now)
		res, err := q.run(ctx, scriptSettle, q.queueKeys(name), q.settleArgs(name, now,
			settleEntry{ref: ref, token: l.Token, maxScore: "+inf", attempts: attempts, decision: d, cause: cause, nonce: id})...)
		if err != nil {
			return policy.Decision{}, err
		}
		r, _ := res.([]any)
		if len(r) != 1 {
			return policy.Decision{}, fmt.Errorf("redisstore: malformed settle reply")
		}
		switch n, _ := r[0].(int64); {
		case n == 1:
			return d, nil
		case n == 0:
			return policy.Decision{}, &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
		case n == 2:
			return policy.Decision{}, &contract.CancelledError{Items: []contract.ItemKey{l.Key()}}
		default:
			attempts = int(-n - 1) // the lease carried a stale count: decide on the stored one
		}
	}
	return policy.Decision{}, fmt.Errorf("redisstore: attempts of %q kept changing during Fail", l.Item.ID)
}

type settleEntry struct {
	ref      string
	token    int64
	maxScore string
	attempts int
	decision policy.Decision
	cause    error
	nonce    string // "" for none (Reap: a retried scan finds nothing left to settle)
}

func (q *workQueue) settleArgs(name string, now time.Time, entries ...settleEntry) []any {
	args := make([]any, 0, 3+10*len(entries))
	args = append(args, nowMicros(now), nanos(now), wakeChannel(q.settings.Namespace, name))
	for _, e := range entries {
		retry, due, dx, nb := "0", "", "", ""
		if e.decision.Retry {
			retry = "1"
			nb = nanos(e.decision.At)
			due, dx = dueMicros(e.decision.At, now), dueHex(e.decision.At, now)
		}
		args = append(args, e.ref, e.token, e.maxScore, e.attempts, retry, due, dx, nb, contract.ErrorText(e.cause), e.nonce)
	}
	return args
}

// Reap hands every lease of the queue that expired by now to the policy,
// as a failure with contract.ErrLeaseExpired. A lease heartbeated between
// the scan and the write is left alone.
func (q *workQueue) Reap(ctx context.Context, name string) (int, error) {
	keys := q.queueKeys(name)
	now := q.clock.Now()
	const batch = 500
	total := 0
	for round := 0; round < 10000; round++ {
		res, err := q.run(ctx, scriptReapScan, keys, nowMicros(now), batch)
		if err != nil {
			return total, err
		}
		flat, _ := res.([]any)
		if len(flat) == 0 {
			return total, nil
		}
		entries := make([]settleEntry, 0, len(flat)/4)
		for i := 0; i+3 < len(flat); i += 4 {
			ref, _ := flat[i].(string)
			tok, _ := flat[i+1].(string)
			a, _ := flat[i+2].(string)
			score, _ := flat[i+3].(string)
			attempts, _ := strconv.Atoi(a)
			token, _ := strconv.ParseInt(tok, 10, 64)
			entries = append(entries, settleEntry{ref: ref, token: token, maxScore: score, attempts: attempts,
				decision: q.policy.Decide(attempts+1, contract.ErrLeaseExpired, now), cause: contract.ErrLeaseExpired})
		}
		res, err = q.run(ctx, scriptSettle, keys, q.settleArgs(name, now, entries...)...)
		if err != nil {
			return total, err
		}
		applied, _ := res.([]any)
		for _, v := range applied {
			if n, _ := v.(int64); n == 1 || n == 2 { // retried, dead-lettered, or cancelled for its mark
				total++
			}
		}
		if len(flat)/4 < batch {
			return total, nil
		}
	}
	return total, nil
}

// The fields of an item record, in their order in the encoded string
// (record_lib.lua's decode and encode): state, attempts, last error,
// not-before, enqueued at, dead at, dead seq, last settle nonce, tenant,
// id, metadata, payload, the ready member, and last, only when a
// lifecycle control set one of its fields, the lifecycle extension.
const (
	fState = iota
	fAttempts
	fError
	fNotBefore
	fEnqueuedAt
	fDeadAt
	fDeadSeq
	fSettleNonce
	fTenant
	fID
	fMetadata
	fPayload
	fMember
	fExt // the lifecycle extension (lifecycle.go); absent from most records
	nFields
)

// record is a decoded item record, one string per field.
type record [nFields]string

// encodeHead encodes every field of r but the last (the ready member,
// which the enqueue script appends once it has drawn the sequence).
func (r *record) encodeHead() string {
	n := 0
	for _, v := range r[:fMember] {
		n += len(v) + 4
	}
	b := make([]byte, 0, n)
	for _, v := range r[:fMember] {
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	return string(b)
}

// parseRecord decodes a record string; ok is false for "" (no record) or
// a malformed one.
func parseRecord(v string) (record, bool) {
	var r record
	if v == "" {
		return r, false
	}
	rest := v
	for i := range r {
		if i == fExt && rest == "" {
			break
		}
		seg, tail, ok := cutLP(rest)
		if !ok {
			return r, false
		}
		r[i] = seg
		rest = tail
	}
	return r, rest == ""
}

// item turns a record into an Item of queue.
func (r record) item(queue string) contract.Item {
	it := contract.Item{
		Tenant:     r[fTenant],
		ID:         r[fID],
		Queue:      queue,
		Attempts:   int(atoi64(r[fAttempts])),
		LastError:  r[fError],
		EnqueuedAt: nsTime(r[fEnqueuedAt]),
		NotBefore:  nsTime(r[fNotBefore]),
		DeadAt:     nsTime(r[fDeadAt]),
	}
	if p := r[fPayload]; p != "" {
		it.Payload = []byte(p)
	}
	if md := r[fMetadata]; md != "" {
		_ = json.Unmarshal([]byte(md), &it.Metadata) // written by Enqueue from a map; cannot fail
	}
	switch r[fState] {
	case "q":
		it.State = contract.StateQueued
	case "d":
		it.State = contract.StateDead
	case "w":
		it.State = contract.StateWaiting
	case "c":
		it.State = contract.StateCancelled
	case "k":
		it.State = contract.StateCompleted
	}
	if r[fExt] != "" {
		parseExt(r[fExt]).fill(&it)
	}
	return it
}
