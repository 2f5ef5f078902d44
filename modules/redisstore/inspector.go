package redisstore

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// Inspector methods only read. They use plain commands and pipelines
// rather than scripts; a snapshot may mix moments a few milliseconds apart,
// which a dashboard does not mind.

// read runs fn under the retry budget.
func (q *workQueue) read(ctx context.Context, fn func(context.Context) error) error {
	return q.retry.do(ctx, func(ctx context.Context) error {
		err := fn(ctx)
		if err == redis.Nil {
			return nil
		}
		return err
	})
}

// Queues lists the names of the queues that hold any item, sorted.
func (q *workQueue) Queues(ctx context.Context) ([]string, error) {
	out := []string{}
	err := q.read(ctx, func(ctx context.Context) error {
		out = out[:0]
		names, err := q.client.SMembers(ctx, q.keys.queues()).Result()
		if err != nil {
			return err
		}
		pipe := q.client.Pipeline()
		cards := make([][]*redis.IntCmd, len(names))
		for i, name := range names {
			p := q.keys.queue(name)
			// The ranges leave out the placeholders (score +inf, or -1 in
			// the dead set; see queue_lib.lua).
			for _, k := range []string{"rot", "wait", "leases"} {
				cards[i] = append(cards[i], pipe.ZCount(ctx, p+k, "-inf", "(+inf"))
			}
			cards[i] = append(cards[i], pipe.ZCount(ctx, p+"dead", "0", "+inf"))
			// Finished items kept for the record count too; the set's
			// placeholder is its empty member, lowest of all.
			cards[i] = append(cards[i], pipe.ZLexCount(ctx, p+"fin", "(", "+"))
		}
		if _, err := pipe.Exec(ctx); err != nil && len(names) > 0 {
			return err
		}
		for i, name := range names {
			var n int64
			for _, c := range cards[i] {
				n += c.Val()
			}
			if n > 0 {
				out = append(out, name)
			}
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// Tenants returns the counts of every tenant that holds items in the queue
// or has been served by it, by tenant name.
func (q *workQueue) Tenants(ctx context.Context, name string) ([]contract.TenantStats, error) {
	p := q.keys.queue(name)
	now := q.clock.Now()
	out := []contract.TenantStats{}
	err := q.read(ctx, func(ctx context.Context) error {
		out = out[:0]
		tenants, err := q.client.SMembers(ctx, p+"tenants").Result()
		if err != nil || len(tenants) == 0 {
			return err
		}
		leased := map[string]int64{}
		refs, err := q.client.ZRange(ctx, p+"leases", 0, -1).Result()
		if err != nil {
			return err
		}
		for _, ref := range refs {
			if t, _, ok := parseRef(ref); ok {
				leased[t]++
			}
		}
		// Waiting and cancelled items by tenant, from their indexes; the
		// paused tenants from the lifecycle hash.
		waiting, cancelled := map[string]int64{}, map[string]int64{}
		for key, into := range map[string]map[string]int64{p + "parked": waiting, p + "cancels": cancelled} {
			refs, err := q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: "-inf", Stop: "(+inf", ByScore: true}).Result()
			if err != nil {
				return err
			}
			for _, ref := range refs {
				if t, _, ok := parseRef(ref); ok {
					into[t]++
				}
			}
		}
		life, err := q.client.HGetAll(ctx, p+"life").Result()
		if err != nil {
			return err
		}
		paused := map[string]bool{}
		for _, t := range pausedTenants(life) {
			paused[t] = true
		}
		type cmds struct {
			ready, queued, dead, pri *redis.IntCmd
			served                   *redis.StringCmd
			due, pdue                *redis.StringSliceCmd
		}
		pipe := q.client.Pipeline()
		cs := make([]cmds, len(tenants))
		ready, nextHex := p+"ready", nextMicrosHex(now)
		for i, t := range tenants {
			// A tenant's queued items are the lex range of READY that
			// starts with lp(t); its due ones end before lp(t)+hex(now+1).
			lt := lp(t)
			cs[i] = cmds{
				ready:  pipe.ZLexCount(ctx, ready, "["+lt, "("+lt+nextHex),
				queued: pipe.ZLexCount(ctx, ready, "["+lt, "("+lt+"g"),
				dead:   pipe.ZLexCount(ctx, p+"tdead", "["+lt, "("+lt+"g"),
				// Its priority section holds due items only.
				pri:    pipe.ZLexCount(ctx, ready, "["+lt+"p", "("+lt+"q"),
				served: pipe.HGet(ctx, p+"served", t),
				// Due items are ordered by due time, not enqueue time;
				// the oldest is looked for among the first hundred.
				due: pipe.ZRangeArgs(ctx, redis.ZRangeArgs{Key: ready, Start: "[" + lt, Stop: "(" + lt + nextHex, ByLex: true, Count: 100}),
				// and so are the first hundred of its priority section.
				pdue: pipe.ZRangeArgs(ctx, redis.ZRangeArgs{Key: ready, Start: "[" + lt + "p", Stop: "(" + lt + "q", ByLex: true, Count: 100}),
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		pipe = q.client.Pipeline()
		eas := make([][]*redis.StringCmd, len(tenants))
		for i, t := range tenants {
			skip := len(lp(t)) + 32 // lp(t), due, seq, then the ref
			for _, m := range cs[i].due.Val() {
				if len(m) > skip {
					eas[i] = append(eas[i], pipe.HGet(ctx, p+"items", m[skip:]))
				}
			}
			for _, m := range cs[i].pdue.Val() {
				if len(m) > skip+3 { // 'p' and the rank come before the due time
					eas[i] = append(eas[i], pipe.HGet(ctx, p+"items", m[skip+3:]))
				}
			}
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		for i, t := range tenants {
			served, _ := strconv.ParseInt(cs[i].served.Val(), 10, 64)
			st := contract.TenantStats{
				Tenant:    t,
				Ready:     cs[i].ready.Val() + cs[i].pri.Val(),
				Later:     cs[i].queued.Val() - cs[i].ready.Val(),
				Leased:    leased[t],
				Dead:      cs[i].dead.Val(),
				Waiting:   waiting[t],
				Cancelled: cancelled[t],
				Paused:    paused[t],
				Served:    served,
			}
			if st.Ready+st.Later+st.Leased+st.Dead+st.Waiting+st.Cancelled == 0 && served == 0 && !st.Paused {
				continue
			}
			for _, c := range eas[i] {
				rec, _ := parseRecord(c.Val())
				if ea := nsTime(rec[fEnqueuedAt]); !ea.IsZero() && (st.OldestReady.IsZero() || ea.Before(st.OldestReady)) {
					st.OldestReady = ea
				}
			}
			out = append(out, st)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b contract.TenantStats) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, err
}

// Rotation returns the queue's tenants in turn order (tenants whose items
// are all delayed at the place they keep) and its last n turns, most
// recent last.
func (q *workQueue) Rotation(ctx context.Context, name string, n int) (contract.Rotation, error) {
	rp, err := q.rotation(ctx, name, n)
	if err != nil {
		return contract.Rotation{Order: []string{}, Recent: []contract.Turn{}}, err
	}
	out := contract.Rotation{Order: make([]string, 0, len(rp.due)+len(rp.later)), Recent: rp.recent}
	for _, pl := range append(rp.due, rp.later...) {
		out.Order = append(out.Order, pl.tenant)
	}
	return out, nil
}

// placed is a tenant's place in a rotation: its turn stamp, or its first
// due time when all its items are delayed.
type placed struct {
	tenant string
	at     float64
}

// rotationParts is what Rotation reads of one queue: the tenants with due
// work in the order claims serve them, the others in the order their
// first items fall due, and the last turns, most recent last.
type rotationParts struct {
	due, later []placed
	recent     []contract.Turn
}

func (q *workQueue) rotation(ctx context.Context, name string, n int) (rotationParts, error) {
	p := q.keys.queue(name)
	var out rotationParts
	err := q.read(ctx, func(ctx context.Context) error {
		out = rotationParts{recent: []contract.Turn{}}
		pipe := q.client.Pipeline()
		// The placeholders (score +inf) are left out.
		rot := pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: p + "rot", Start: "-inf", Stop: "(+inf", ByScore: true})
		wait := pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: p + "wait", Start: "-inf", Stop: "(+inf", ByScore: true})
		var logCmd *redis.StringSliceCmd
		if keep := min(n, q.settings.RecentTurns); keep > 0 {
			// The claim trims the log in steps, so it may hold a few more.
			logCmd = pipe.LRange(ctx, p+"log", 0, int64(keep-1))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		// A waiting tenant whose first item is due by now is one the next
		// claim moves back to its turn; the others come last, in the order
		// their first items fall due.
		for _, z := range rot.Val() {
			t, _ := z.Member.(string)
			out.due = append(out.due, placed{t, z.Score})
		}
		// The claim's now: nowMicros, rounded down.
		now := float64(q.clock.Now().UnixNano() / 1000)
		var woken []string
		for _, z := range wait.Val() {
			t, _ := z.Member.(string)
			if z.Score <= now {
				woken = append(woken, t)
			} else {
				out.later = append(out.later, placed{t, z.Score})
			}
		}
		if len(woken) > 0 {
			stamps, err := q.client.HMGet(ctx, p+"turns", woken...).Result()
			if err != nil {
				return err
			}
			for i, t := range woken {
				s, _ := stamps[i].(string)
				f, _ := strconv.ParseFloat(s, 64)
				out.due = append(out.due, placed{t, f})
			}
		}
		byAt := func(a, b placed) int {
			return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.tenant, b.tenant))
		}
		slices.SortFunc(out.due, byAt)
		slices.SortFunc(out.later, byAt)
		if logCmd != nil {
			// Newest claim first; each claim's turns are in order.
			var turns []contract.Turn
			for _, e := range logCmd.Val() {
				claim := parseClaimLog(e)
				for i := len(claim) - 1; i >= 0 && len(turns) < n; i-- {
					turns = append(turns, claim[i])
				}
				if len(turns) >= n {
					break
				}
			}
			slices.Reverse(turns)
			out.recent = append(out.recent, turns...)
		}
		return nil
	})
	return out, err
}

// parseClaimLog reads a log entry: lp(worker) lp(unix ns), then the refs
// the claim served, one turn each, in order.
func parseClaimLog(s string) []contract.Turn {
	w, rest, ok1 := cutLP(s)
	ns, rest, ok2 := cutLP(rest)
	if !ok1 || !ok2 {
		return nil
	}
	at := nsTime(ns)
	var out []contract.Turn
	for rest != "" {
		t, r, ok1 := cutLP(rest)
		id, r, ok2 := cutLP(r)
		if !ok1 || !ok2 {
			return out
		}
		out = append(out, contract.Turn{Tenant: t, ID: id, Worker: w, At: at})
		rest = r
	}
	return out
}

// Leases pages through the queue's live leases, soonest expiry first.
func (q *workQueue) Leases(ctx context.Context, name string, page contract.PageRequest) (contract.LeasePage, error) {
	limit := page.Limit
	afterScore, afterRef := "-inf", ""
	if page.Cursor != "" {
		s, r, ok := strings.Cut(page.Cursor, "/")
		if _, err := strconv.ParseInt(s, 10, 64); !ok || err != nil {
			return contract.LeasePage{}, &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this store returned; pass the Next of the previous page"}
		}
		afterScore, afterRef = s, r
	}
	p := q.keys.queue(name)
	out := contract.LeasePage{Leases: []contract.Lease{}}
	err := q.read(ctx, func(ctx context.Context) error {
		out = contract.LeasePage{Leases: []contract.Lease{}}
		var refs []redis.Z
		for offset := int64(0); len(refs) <= limit; {
			batch, err := q.client.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: p + "leases", Start: afterScore, Stop: "(+inf",
				ByScore: true, Offset: offset, Count: int64(limit + 1)}).Result()
			if err != nil {
				return err
			}
			for _, z := range batch {
				ref, _ := z.Member.(string)
				if afterRef != "" && strconv.FormatInt(int64(z.Score), 10) == afterScore && ref <= afterRef {
					continue
				}
				refs = append(refs, z)
			}
			if len(batch) < limit+1 {
				break
			}
			offset += int64(len(batch))
		}
		pipe := q.client.Pipeline()
		recs := make([]*redis.StringCmd, len(refs))
		lvs := make([]*redis.StringCmd, len(refs))
		for i, z := range refs {
			ref, _ := z.Member.(string)
			recs[i] = pipe.HGet(ctx, p+"items", ref)
			lvs[i] = pipe.HGet(ctx, p+"lease", ref)
		}
		if len(refs) > 0 {
			if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
				return err
			}
		}
		for i := range refs {
			if len(out.Leases) == limit {
				last := refs[i-1]
				ref, _ := last.Member.(string)
				out.Next = strconv.FormatInt(int64(last.Score), 10) + "/" + ref
				break
			}
			if l, ok := leaseFromRecord(name, recs[i].Val(), lvs[i].Val()); ok {
				out.Leases = append(out.Leases, l)
			}
		}
		return nil
	})
	return out, err
}

// leaseFromRecord builds the lease of an item from its record and its entry
// in the queue's lease hash ("token|expiry us|expiry ns|previous token|
// heartbeat nonce|worker"); ok is false when the item is not leased.
func leaseFromRecord(queue string, raw string, leaseValue string) (contract.Lease, bool) {
	parts := strings.SplitN(leaseValue, "|", 6)
	rec, ok := parseRecord(raw)
	if !ok || len(parts) != 6 {
		return contract.Lease{}, false
	}
	it := rec.item(queue)
	it.State = contract.StateLeased
	return contract.Lease{Item: it, Worker: parts[5], ExpiresAt: nsTime(parts[2]), Token: atoi64(parts[0])}, true
}

// Item finds one item by key, with its lease when leased.
func (q *workQueue) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	var raw, leaseValue string
	err := q.read(ctx, func(ctx context.Context) error {
		p, ref := q.keys.queue(key.Queue), itemRef(key.Tenant, key.ID)
		pipe := q.client.Pipeline()
		recCmd := pipe.HGet(ctx, p+"items", ref)
		leaseCmd := pipe.HGet(ctx, p+"lease", ref)
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		raw, leaseValue = recCmd.Val(), leaseCmd.Val()
		return nil
	})
	if err != nil {
		return contract.ItemInfo{}, err
	}
	rec, ok := parseRecord(raw)
	if !ok {
		return contract.ItemInfo{}, contract.ErrNotFound
	}
	info := contract.ItemInfo{Item: rec.item(key.Queue)}
	if l, ok := leaseFromRecord(key.Queue, raw, leaseValue); ok {
		info.Item.State = contract.StateLeased
		info.Lease = &l
	}
	return info, nil
}

// Health reports the server's eviction policy, persistence, memory and
// evicted keys, judged as Preflight judges them, plus the preflight
// verdict. A refusing server is reported, not an error.
func (q *workQueue) Health(ctx context.Context) (contract.Health, error) {
	return health(ctx, q.client, q.settings, q.retry)
}

// Health reports on the server as [RedisWorkQueue.Health] does.
func (s *RedisStateStore) Health(ctx context.Context) (contract.Health, error) {
	return health(ctx, s.d.client, s.d.settings, s.d.retry)
}

func health(ctx context.Context, c redis.UniversalClient, s Settings, r retrier) (contract.Health, error) {
	var rep PreflightReport
	var verdict error
	err := r.do(ctx, func(ctx context.Context) error {
		var err error
		rep, err = Preflight(ctx, c, s)
		if _, ok := err.(*contract.PreflightError); ok {
			verdict = err
			return nil
		}
		return err
	})
	if err != nil {
		return contract.Health{}, err
	}
	h := contract.Health{Backing: "redis", Checks: rep.Checks, Details: map[string]string{}}
	for k, v := range rep.Details {
		h.Details[k] = v
	}
	h.Details["namespace"] = s.Namespace
	h.Details["max value bytes"] = strconv.Itoa(s.MaxValueBytes)
	h.Details["durable required"] = strconv.FormatBool(!s.Volatile)
	h.Details["checked at"] = time.Now().UTC().Format(time.RFC3339)
	if verdict != nil {
		h.Details["preflight"] = "refused: " + verdict.Error()
	} else {
		h.Details["preflight"] = "passed"
	}
	return h, nil
}
