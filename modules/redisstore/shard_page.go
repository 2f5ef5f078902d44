package redisstore

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/adkit/adk/modules/contract"
)

// The listings of a sharded queue ask every shard for a page and merge
// them. Where a shard's cursor names a place every shard understands (a
// lease's expiry and ref, a finished item's FIN member) the merged page's
// cursor is that place; where it is a shard's own counter (dead seqs,
// event seqs, offsets) the cursor holds one place per shard, "s" then the
// places joined by dots.

// shardCursor splits a cursor of n places ("" gives n empty ones).
func shardCursor(c string, n int, field string) ([]string, error) {
	if c == "" {
		return make([]string, n), nil
	}
	parts := strings.Split(strings.TrimPrefix(c, "s"), ".")
	if !strings.HasPrefix(c, "s") || len(parts) != n {
		return nil, &contract.ValidationError{Field: field, Problem: "is not a cursor this queue returned; pass \"\" or the cursor of the previous page"}
	}
	return parts, nil
}

func joinShardCursor(places []string) string { return "s" + strings.Join(places, ".") }

// merged is one entry of a merged listing: its shard and place there.
type merged[T any] struct {
	shard, at int
	v         T
}

// mergeShards lists every shard's entries in the order by gives, ties in
// shard order, each shard's own order kept.
func mergeShards[T any](per [][]T, by func(a, b T) int) []merged[T] {
	var out []merged[T]
	for k, vs := range per {
		for i, v := range vs {
			out = append(out, merged[T]{k, i, v})
		}
	}
	slices.SortStableFunc(out, func(a, b merged[T]) int {
		return cmp.Or(by(a.v, b.v), cmp.Compare(a.shard, b.shard), cmp.Compare(a.at, b.at))
	})
	return out
}

// deadTop is the place above a shard's newest dead letter.
const deadTop = "t"

// DeadLetters merges the shards' matching letters by when they died.
// The cursor holds each shard's place: the dead seq the listing has gone
// past there, or deadTop above its newest.
func (s *shardedQueue) DeadLetters(ctx context.Context, dq contract.DeadLetterQuery) (contract.ItemPage, error) {
	n := len(s.shards)
	places, err := shardCursor(dq.Page.Cursor, n, "PageRequest.Cursor")
	if err != nil {
		return contract.ItemPage{}, err
	}
	for k, p := range places {
		switch {
		case p == "" && dq.Newest:
			places[k] = deadTop
		case p == "":
			places[k] = "0"
		case p != deadTop:
			if _, err := parseCursor(p); err != nil {
				return contract.ItemPage{}, err
			}
		}
	}
	limit, skip := dq.Page.Limit, dq.Skip
	need := limit + skip + 1
	per := make([][]deadHit, n)
	err = s.some(s.scope(dq.Tenant), func(k int, q *workQueue) error {
		from := deadScan{Newest: dq.Newest}
		switch p := places[k]; {
		case p == deadTop && !dq.Newest:
			return nil // nothing died after the top
		case p == deadTop:
		case dq.Newest:
			from.Before = strconv.FormatInt(atoi36(p)+1, 10)
		default:
			from.After = atoi36(p)
		}
		return q.scanDead(ctx, dq.DeadLetterFilter, from, min(need, deadScanBudget), func(h deadHit) bool {
			per[k] = append(per[k], h)
			return len(per[k]) < need
		})
	})
	if err != nil {
		return contract.ItemPage{}, err
	}
	all := mergeShards(per, func(a, b deadHit) int {
		c := a.item.DeadAt.Compare(b.item.DeadAt)
		if dq.Newest {
			return -c
		}
		return c
	})
	out := contract.ItemPage{Items: []contract.Item{}}
	for i, m := range all {
		if i == skip+limit {
			out.Next = joinShardCursor(places)
			break
		}
		if i >= skip {
			out.Items = append(out.Items, m.v.item)
		}
		seq := m.v.seq
		if dq.Newest {
			seq--
		}
		places[m.shard] = formatCursor(seq)
	}
	return out, nil
}

func atoi36(s string) int64 {
	n, _ := strconv.ParseInt(s, 36, 64)
	return n
}

// DeadLetterSummary counts (and groups) the matching letters of every
// shard the filter can match.
func (s *shardedQueue) DeadLetterSummary(ctx context.Context, f contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	only := s.scope(f.Tenant)
	if groups == 0 && f.ID == "" && f.ErrorContains == "" {
		total := make([]int64, len(s.shards))
		err := s.some(only, func(k int, q *workQueue) error {
			sum, err := q.DeadLetterSummary(ctx, f, 0)
			total[k] = sum.Total
			return err
		})
		out := contract.DeadLetterSummary{Groups: []contract.DeadLetterGroup{}}
		for _, t := range total {
			out.Total += t
		}
		return out, err
	}
	if only == nil {
		for k := range s.shards {
			only = append(only, k)
		}
	}
	tally := contract.NewErrorTally(groups)
	for _, k := range only {
		err := s.shards[k].scanDead(ctx, f, deadScan{}, deadScanBudget, func(h deadHit) bool {
			tally.Add(h.item.LastError, h.item.DeadAt)
			return true
		})
		if err != nil {
			return contract.DeadLetterSummary{}, err
		}
	}
	return tally.Summary(), nil
}

// Leases merges the shards' live leases, soonest expiry first. The
// cursor is a single shard's ("expiry us/ref"), which every shard reads
// as the same place.
func (s *shardedQueue) Leases(ctx context.Context, name string, page contract.PageRequest) (contract.LeasePage, error) {
	per := make([][]contract.Lease, len(s.shards))
	more := false
	var mu chanMutex
	err := s.each(func(k int, q *workQueue) error {
		lp, err := q.Leases(ctx, name, page)
		per[k] = lp.Leases
		if lp.Next != "" {
			mu.set(&more)
		}
		return err
	})
	out := contract.LeasePage{Leases: []contract.Lease{}}
	if err != nil {
		return out, err
	}
	key := func(l contract.Lease) (int64, string) {
		return l.ExpiresAt.UnixNano() / 1000, itemRef(l.Item.Tenant, l.Item.ID)
	}
	all := mergeShards(per, func(a, b contract.Lease) int {
		sa, ra := key(a)
		sb, rb := key(b)
		return cmp.Or(cmp.Compare(sa, sb), strings.Compare(ra, rb))
	})
	for i, m := range all {
		if i == page.Limit {
			more = true
			break
		}
		out.Leases = append(out.Leases, m.v)
	}
	if more && len(out.Leases) > 0 {
		sc, ref := key(out.Leases[len(out.Leases)-1])
		out.Next = strconv.FormatInt(sc, 10) + "/" + ref
	}
	return out, nil
}

// chanMutex sets a shared flag from several goroutines.
type chanMutex struct{ mu sync.Mutex }

func (m *chanMutex) set(b *bool) {
	m.mu.Lock()
	*b = true
	m.mu.Unlock()
}

// Waiting merges the shards' waiting items by when they began to wait.
// The cursor holds each shard's offset.
func (s *shardedQueue) Waiting(ctx context.Context, name string, page contract.PageRequest) (contract.ItemPage, error) {
	n := len(s.shards)
	out := contract.ItemPage{Items: []contract.Item{}}
	places, err := shardCursor(page.Cursor, n, "PageRequest.Cursor")
	if err != nil {
		return out, err
	}
	offs := make([]int64, n)
	for k, p := range places {
		if p == "" {
			continue
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return out, &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this store returned; pass the Next of the previous page"}
		}
		offs[k] = v
	}
	per := make([][]contract.Item, n)
	more := false
	var mu chanMutex
	err = s.each(func(k int, q *workQueue) error {
		ip, err := q.Waiting(ctx, name, contract.PageRequest{Cursor: strconv.FormatInt(offs[k], 10), Limit: page.Limit})
		per[k] = ip.Items
		if ip.Next != "" {
			mu.set(&more)
		}
		return err
	})
	if err != nil {
		return out, err
	}
	since := func(it contract.Item) int64 {
		if it.Waiting == nil {
			return 0
		}
		return it.Waiting.Since.UnixNano()
	}
	all := mergeShards(per, func(a, b contract.Item) int { return cmp.Compare(since(a), since(b)) })
	for i, m := range all {
		if i == page.Limit {
			more = true
			break
		}
		out.Items = append(out.Items, m.v)
		offs[m.shard]++
	}
	if more {
		for k := range places {
			places[k] = strconv.FormatInt(offs[k], 10)
		}
		out.Next = joinShardCursor(places)
	}
	return out, nil
}

// Finished merges the shards' finished items, newest first. The cursor is
// a single shard's (a FIN member, which orders items across shards as in
// one).
func (s *shardedQueue) Finished(ctx context.Context, fq contract.FinishedQuery) (contract.FinishedPage, error) {
	dir, from := byte(0), ""
	if fq.Page.Cursor != "" {
		var err error
		if dir, from, err = parseFinCursor(fq.Page.Cursor); err != nil {
			return contract.FinishedPage{}, err
		}
	}
	limit := fq.Page.Limit
	per := make([][]contract.Item, len(s.shards))
	more := false
	var mu chanMutex
	err := s.some(s.scope(fq.Tenant), func(k int, q *workQueue) error {
		fp, err := q.Finished(ctx, fq)
		per[k] = fp.Items
		if (dir == 'p' && fp.Prev != "") || (dir != 'p' && fp.Next != "") {
			mu.set(&more)
		}
		return err
	})
	if err != nil {
		return contract.FinishedPage{}, err
	}
	member := func(it contract.Item) string { return finMember(it.FinishedAt.UnixMicro(), it.Tenant, it.ID) }
	all := mergeShards(per, func(a, b contract.Item) int { return strings.Compare(member(b), member(a)) })
	got := make([]contract.Item, 0, len(all))
	for _, m := range all {
		got = append(got, m.v)
	}
	if len(got) > limit {
		more = true
		if dir == 'p' {
			got = got[len(got)-limit:] // the newer ones nearest the cursor
		} else {
			got = got[:limit]
		}
	}
	page := contract.FinishedPage{Items: got}
	if len(got) == 0 {
		if dir == 'p' {
			page.Next = finCursor('n', from)
		}
		if dir == 'n' {
			page.Prev = finCursor('p', from)
		}
		return page, nil
	}
	first, last := member(got[0]), member(got[len(got)-1])
	switch dir {
	case 0:
		if more {
			page.Next = finCursor('n', last)
		}
	case 'n':
		page.Prev = finCursor('p', first)
		if more {
			page.Next = finCursor('n', last)
		}
	case 'p':
		page.Next = finCursor('n', last)
		if more {
			page.Prev = finCursor('p', first)
		}
	}
	return page, nil
}

// QueueEvents merges the shards' event logs by time. The cursor holds
// each shard's: the seq of the last event read there.
func (s *shardedQueue) QueueEvents(ctx context.Context, name, cursor string, limit int) (contract.EventPage, error) {
	n := len(s.shards)
	places, err := shardCursor(cursor, n, "cursor")
	if err != nil {
		return contract.EventPage{}, err
	}
	for _, p := range places {
		if p == "" {
			continue
		}
		if v, err := strconv.ParseInt(p, 10, 64); err != nil || v < 0 {
			return contract.EventPage{}, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor this queue returned; pass \"\" or an EventPage's Next"}
		}
	}
	pages := make([]contract.EventPage, n)
	seqs := make([][]string, n)
	err = s.each(func(k int, q *workQueue) error {
		var err error
		pages[k], seqs[k], err = q.queueEvents(ctx, name, places[k], limit)
		return err
	})
	if err != nil {
		return contract.EventPage{}, err
	}
	per := make([][]contract.Event, n)
	out := contract.EventPage{Events: []contract.Event{}}
	for k, p := range pages {
		per[k] = p.Events
		out.Gap = out.Gap || p.Gap
	}
	// A k-way merge by time; events of one moment in different shards go
	// in the order of an item's life (enqueued before claimed before
	// settled), then by shard.
	used := make([]int, n)
	for len(out.Events) < limit {
		best := -1
		for k := range per {
			if used[k] == len(per[k]) {
				continue
			}
			if best < 0 {
				best = k
				continue
			}
			a, b := per[k][used[k]], per[best][used[best]]
			if c := a.At.Compare(b.At); c < 0 || (c == 0 && eventRank(a.Kind) < eventRank(b.Kind)) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		out.Events = append(out.Events, per[best][used[best]])
		used[best]++
	}
	for k := range places {
		switch {
		case used[k] == len(per[k]):
			places[k] = pages[k].Next
		case used[k] > 0:
			places[k] = seqs[k][used[k]-1]
		}
	}
	out.Next = joinShardCursor(places)
	return out, nil
}

// eventRank orders the kinds of events in an item's life.
func eventRank(k contract.EventKind) int {
	switch k {
	case contract.EventEnqueued, contract.EventRequeued:
		return 0
	case contract.EventClaimed, contract.EventSignalled, contract.EventTimedOut:
		return 1
	}
	return 2
}
