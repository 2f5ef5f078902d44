package redisstore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// A sharded claim serves the tenants with due work, across shards, least
// recently served first, as one shard's rotation does within it: before
// each claim it reads every shard's due tenants in that shard's own turn
// order (one pipelined round trip, a read-only script per shard), deals
// the batch's turns by walking those lists (the shard whose next tenant
// this queue served longest ago takes the turn), and then claims each
// shard's share at once. A tenant this process has not served yet joins
// behind those it has, the new tenants of each shard spread evenly among
// the others', so a shard of two tenants is dealt two turns for each of a
// shard of one. With each shard's own rotation exact, every tenant with
// due work is served once in any run of as many claims as there are such
// tenants, as on one shard. The served order is this process's: workers
// of several processes each keep their own.

// fairState is what a queue's claims remember of the tenants they served:
// when each was last served, counted in turns.
type fairState struct {
	turns float64
	last  map[string]float64

	heads *shardLists // the shards' due tenants as the last claim left them
	gen   uint64      // the shardedQueue's gen when heads were read
}

// headsListed is how many of each shard's due tenants a claim reads at
// least.
const headsListed = 64

// maxRemembered bounds the tenants a fairState remembers: past it, it
// forgets them all (and serves on as if they were new).
const maxRemembered = 100000

// deal walks the shards' tenant lists (each in its shard's turn order)
// for max turns and returns the shard of each turn. A tenant not served
// yet is placed behind the others; with remember set it keeps that place
// in later claims.
func (f *fairState) deal(lists [][]string, max int, remember bool) []int {
	picks, _ := f.dealTenants(lists, nil, max, remember)
	return picks
}

// dealTenants is deal, returning too the tenant dealt each turn. A
// paused tenant is dealt no turn and keeps its place: its shard's turn
// goes to the first of its tenants behind it that is not paused.
func (f *fairState) dealTenants(lists [][]string, paused map[string]bool, max int, remember bool) ([]int, []string) {
	if f.last == nil || len(f.last) > maxRemembered {
		f.last = map[string]float64{}
	}
	at := map[string]float64{}
	queues := make([][]string, len(lists))
	for k, l := range lists {
		queues[k] = slices.Clone(l)
		for j, t := range l {
			v, ok := f.last[t]
			if !ok {
				v = f.turns + float64(j+1)/float64(len(l)+1)
				if remember {
					f.last[t] = v
				}
			}
			at[t] = v
		}
	}
	out := make([]int, 0, max)
	tenants := make([]string, 0, max)
	turn := f.turns
	head := func(q []string) int { // the first not paused, -1 for none
		for j, t := range q {
			if !paused[t] {
				return j
			}
		}
		return -1
	}
	for range max {
		best, bj := -1, -1
		for k, q := range queues {
			j := head(q)
			if j >= 0 && (best < 0 || at[q[j]] < at[queues[best][bj]]) {
				best, bj = k, j
			}
		}
		if best < 0 {
			break
		}
		q := queues[best]
		t := q[bj]
		turn++
		at[t] = turn
		queues[best] = append(append(q[:bj:bj], q[bj+1:]...), t)
		out = append(out, best)
		tenants = append(tenants, t)
	}
	return out, tenants
}

// served records that tenant was served next.
func (f *fairState) served(tenant string) {
	f.turns++
	f.last[tenant] = f.turns
}

// fair returns queue name's fairState; the caller holds s.mu.
func (s *shardedQueue) fair(name string) *fairState {
	st := s.wrr[name]
	if st == nil {
		if len(s.wrr) >= 1024 { // a bound for a process that names queues without end
			clear(s.wrr)
		}
		st = &fairState{last: map[string]float64{}}
		s.wrr[name] = st
	}
	return st
}

// Claim leases up to req.Max items from the queue's shards: the batch's
// turns are dealt to the shards (see fairState), each shard claims its
// share in one script call (the shards at once), and the leases come back
// in turn order. A shard that had less than its share leaves the rest to
// the others, in further rounds.
func (s *shardedQueue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	return s.claim(ctx, nil, req)
}

// CompleteAndClaim completes each shard's part of done in the same script
// call as that shard's share of the claim (a shard with leases to
// complete but no share completes only), then claims as Claim does.
func (s *shardedQueue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	return s.claim(ctx, done, req)
}

func (s *shardedQueue) claim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	completing := done != nil
	by, _ := s.splitLeases(done)
	report := contract.ClaimReportFrom(ctx)
	out := make([]contract.Lease, 0, req.Max)
	var settled []error
	var firstErr error
	n := len(s.shards)
	// The shards' due tenants as the last claim left them, unless this
	// process changed the queue since or a delayed tenant fell due.
	heads := s.cached(req.Queue, q0Micros(s))
	// Round one completes done, claims each shard's share and lists every
	// shard's due tenants (a shard without a share only lists them); a
	// shard that returns less than its share is left out of the rounds
	// that fill the rest of the batch from the others by the lists the
	// round before returned.
	excluded := make([]bool, n)
	for round := 0; round <= n && (round == 0 || len(out) < req.Max); round++ {
		var picks []int
		share := make([]int, n)
		want := req.Max - len(out)
		if want > 0 && heads == nil {
			var err error
			if heads, err = s.heads(ctx, req.Queue, max(2*want, headsListed)); err != nil {
				if round == 0 {
					return nil, err
				}
				break
			}
		}
		if want > 0 {
			lists := make([][]string, n)
			for k := range s.shards {
				if !excluded[k] {
					lists[k] = heads.lists[k]
				}
			}
			s.mu.Lock()
			picks, _ = s.fair(req.Queue).dealTenants(lists, heads.paused, want, true)
			s.mu.Unlock()
			for _, k := range picks {
				share[k]++
			}
		}
		// Round one calls every shard, for its due tenants at least; a
		// refill only those with a share.
		var calls []int
		for k := range s.shards {
			if !excluded[k] && (round == 0 || share[k] > 0) {
				calls = append(calls, k)
			}
		}
		if len(calls) == 0 {
			break
		}
		var with [][]contract.Lease
		if round == 0 {
			with = by
		}
		got := s.claimRound(ctx, calls, share, with, req, report != nil && round == 0)
		for _, k := range calls {
			g := got[k]
			if round == 0 && report != nil {
				// The first round's reports are the claim's: a tenant held
				// there would be passed over again by a refill. A shard
				// not claimed from notes its paused tenants here.
				if g.report != nil {
					mergeReport(report, g.report)
				} else if g.err == nil {
					for range g.count.paused {
						report.Note(contract.HeldPaused, time.Time{})
					}
				}
			}
			if g.settled != nil {
				settled = append(settled, g.settled)
			}
			if g.err != nil {
				if firstErr == nil {
					firstErr = g.err
				}
				excluded[k] = true
				heads.lost = true
				continue
			}
			heads.set(k, g.count)
			if len(g.leases) < share[k] {
				excluded[k] = true
			}
		}
		next := make([]int, n)
		s.mu.Lock()
		f := s.fair(req.Queue)
		for _, k := range picks {
			if next[k] < len(got[k].leases) {
				l := got[k].leases[next[k]]
				next[k]++
				out = append(out, l)
				f.served(l.Item.Tenant)
			}
		}
		s.mu.Unlock()
	}
	if heads != nil {
		s.keep(req.Queue, heads)
	}
	switch {
	case firstErr != nil && len(out) == 0 && settled == nil:
		return nil, firstErr
	case firstErr != nil && completing:
		// A shard's completes may or may not have happened: say so rather
		// than report them done.
		return out, firstErr
	}
	if err := mergeSettled(done, settled); err != nil {
		return out, err
	}
	if len(out) == 0 {
		if completing && req.Max == 0 {
			return nil, nil
		}
		return nil, contract.ErrEmpty
	}
	return out, nil
}

// q0Micros is the time of the queue's clock in unix microseconds.
func q0Micros(s *shardedQueue) int64 { return s.first().clock.Now().UnixNano() / 1000 }

// claimShare is what one shard's call of a claim round returned.
type claimShare struct {
	leases  []contract.Lease
	count   shardCount // the shard's due tenants once the call was done
	report  *contract.ClaimReport
	settled error // lost and cancelled leases of done
	err     error
}

// claimRound makes one call per shard in only, at once: shard k claims
// share[k] items, completing by[k] first when it has leases to complete,
// or only lists its due tenants when it has neither; every call returns
// the shard's due tenants as it left them.
func (s *shardedQueue) claimRound(ctx context.Context, only, share []int, by [][]contract.Lease, req contract.ClaimRequest, withReport bool) []claimShare {
	got := make([]claimShare, len(s.shards))
	_ = s.some(only, func(k int, q *workQueue) error {
		g := &got[k]
		if share[k] == 0 && (by == nil || len(by[k]) == 0) {
			g.count, g.err = q.shardHeads(ctx, req.Queue, headsListed)
			return nil
		}
		cctx := ctx
		switch {
		case withReport:
			g.report = &contract.ClaimReport{}
			cctx = contract.WithClaimReport(ctx, g.report)
		case contract.ClaimReportFrom(ctx) != nil:
			// A refill's holds are not the claim's (see claim): the
			// caller's report must not see them.
			cctx = contract.WithClaimReport(ctx, nil)
		}
		r := req
		r.Max = share[k]
		var err error
		if by != nil && len(by[k]) > 0 {
			g.leases, g.count, err = q.completeAndClaimCounted(cctx, by[k], r, nonce(), true)
		} else {
			g.leases, g.count, err = q.claim(cctx, r, true)
		}
		switch {
		case errors.Is(err, contract.ErrEmpty):
		case isSettle(err):
			g.settled = err
		default:
			g.err = err
		}
		return nil
	})
	return got
}

// shardHeads lists the shard's due tenants alone (shard_heads.lua).
func (q *workQueue) shardHeads(ctx context.Context, name string, max int) (shardCount, error) {
	p := q.keys.queue(name)
	keys := []string{p + "rot", p + "wait", p + "turns", p + "waits", p + "life"}
	var res any
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		res, err = q.retry.eval(ctx, q.client, scriptShardHeads, keys, nowMicros(q.clock.Now()), max)
		return err
	})
	if err != nil {
		return shardCount{}, err
	}
	return parseCount(res)
}

// shardLists is what a claim knows of each shard's due tenants: in each
// shard's turn order, the paused ones marked, and when the next delayed
// tenant or wait of any shard falls due.
type shardLists struct {
	lists  [][]string
	paused map[string]bool
	dueAt  []int64
	lost   bool // a shard's call failed: its list is not to be kept
}

// set records shard k's tenants as a call returned them.
func (h *shardLists) set(k int, c shardCount) {
	for _, t := range h.lists[k] {
		delete(h.paused, t)
	}
	h.lists[k] = c.heads
	for t := range c.paused {
		h.paused[t] = true
	}
	h.dueAt[k] = c.dueAt
}

// heads lists the due tenants of queue name in every shard, at most max
// of each, the shards at once.
func (s *shardedQueue) heads(ctx context.Context, name string, max int) (*shardLists, error) {
	n := len(s.shards)
	h := &shardLists{lists: make([][]string, n), paused: map[string]bool{}, dueAt: make([]int64, n)}
	got := make([]shardCount, n)
	err := s.each(func(k int, q *workQueue) error {
		var err error
		got[k], err = q.shardHeads(ctx, name, max)
		return err
	})
	if err != nil {
		return nil, err
	}
	for k, c := range got {
		h.set(k, c)
	}
	return h, nil
}

// cached returns a copy of the due tenants the last claim of queue name
// left, or nil when there are none to trust: none kept, a call of this
// process that can give a tenant due work (an enqueue, a retry, a
// resume...) since, or a delayed tenant or wait fallen due by nowUs.
func (s *shardedQueue) cached(name string, nowUs int64) *shardLists {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fair(name)
	h := f.heads
	if h == nil || f.gen != s.gen {
		f.gen = s.gen
		return nil
	}
	for _, at := range h.dueAt {
		if at >= 0 && at <= nowUs {
			return nil
		}
	}
	c := &shardLists{lists: slices.Clone(h.lists), paused: maps.Clone(h.paused), dueAt: slices.Clone(h.dueAt)}
	return c
}

// keep stores the due tenants a claim of queue name left, for the next.
func (s *shardedQueue) keep(name string, h *shardLists) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.fair(name)
	if h.lost {
		f.heads = nil
		return
	}
	f.heads = h
}

// touch notes that the queues may have tenants with due work the claims'
// lists do not show: the next claim of each lists them first.
func (s *shardedQueue) touch() {
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
}

// mergeReport adds one shard's claim report to the claim's.
func mergeReport(into, r *contract.ClaimReport) {
	into.PassedOver += r.PassedOver
	for why, n := range r.Held {
		if into.Held == nil {
			into.Held = map[contract.HeldReason]int{}
		}
		into.Held[why] += n
	}
	if !r.RetryAt.IsZero() && (into.RetryAt.IsZero() || r.RetryAt.Before(into.RetryAt)) {
		into.RetryAt = r.RetryAt
	}
	into.QueuePaused = into.QueuePaused || r.QueuePaused
}

// Rotation is the order the next claims would serve the tenants in: the
// shards' due tenants dealt out as the next claims would deal them, then every shard's tenants whose items are
// all delayed, by when their first items fall due; and the last n turns
// of all shards, most recent last.
func (s *shardedQueue) Rotation(ctx context.Context, name string, n int) (contract.Rotation, error) {
	per := make([]rotationParts, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.rotation(ctx, name, n)
		return err
	})
	out := contract.Rotation{Order: []string{}, Recent: []contract.Turn{}}
	if err != nil {
		return out, err
	}
	lists := make([][]string, len(s.shards))
	total := 0
	var later []placed
	var recent []contract.Turn
	for i, p := range per {
		for _, pl := range p.due {
			lists[i] = append(lists[i], pl.tenant)
		}
		total += len(p.due)
		later = append(later, p.later...)
		recent = append(recent, p.recent...)
	}
	// A copy of what the claims remember, so that reading does not move it.
	s.mu.Lock()
	var st fairState
	if cur := s.wrr[name]; cur != nil {
		st = fairState{turns: cur.turns, last: maps.Clone(cur.last)}
	}
	s.mu.Unlock()
	next := make([]int, len(s.shards))
	for _, k := range st.deal(lists, total, false) {
		if next[k] < len(per[k].due) {
			out.Order = append(out.Order, per[k].due[next[k]].tenant)
			next[k]++
		}
	}
	for k, p := range per { // any the picks left out
		for _, pl := range p.due[next[k]:] {
			out.Order = append(out.Order, pl.tenant)
		}
	}
	slices.SortStableFunc(later, func(a, b placed) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return 0
	})
	for _, pl := range later {
		out.Order = append(out.Order, pl.tenant)
	}
	slices.SortStableFunc(recent, func(a, b contract.Turn) int { return a.At.Compare(b.At) })
	if len(recent) > n {
		recent = recent[len(recent)-n:]
	}
	out.Recent = append(out.Recent, recent...)
	return out, nil
}
