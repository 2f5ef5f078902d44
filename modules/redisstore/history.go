package redisstore

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

var (
	_ contract.HistoryKeeper = (*RedisWorkQueue)(nil)
	_ contract.HistoryKeeper = (*workQueue)(nil)
)

// The history keys of a queue (scripts/history_lib.lua describes them):
// the retention itself lives in the queue's lifecycle hash.
const (
	// pruneScan bounds how many of the oldest finished items one Prune
	// call reads: the most it skips (items still within a uniqueness
	// window, cancelled ones a retention that keeps nothing leaves to
	// PurgeCancelled) before giving up until the next call.
	pruneScan = 4 * contract.PruneBatch
)

// SetRetention writes the queue's retention into its lifecycle hash.
func (q *workQueue) SetRetention(ctx context.Context, name string, r contract.Retention) error {
	_, err := q.run(ctx, scriptSetRetention, q.queueKeys(name),
		strconv.FormatInt(r.Age.Microseconds(), 10), strconv.Itoa(r.Count), strconv.Itoa(r.Events))
	return err
}

// Retention reads the queue's retention.
func (q *workQueue) Retention(ctx context.Context, name string) (contract.Retention, error) {
	var vals []any
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		vals, err = q.client.HMGet(ctx, q.keys.queue(name)+"life", "ra", "rc", "re").Result()
		return err
	})
	if err != nil {
		return contract.Retention{}, err
	}
	num := func(i int) int64 {
		s, _ := vals[i].(string)
		return atoi64(s)
	}
	return contract.Retention{Age: time.Duration(num(0)) * time.Microsecond, Count: int(num(1)), Events: int(num(2))}, nil
}

// EnqueueReport enqueues as Enqueue does, saying which items were
// duplicates; the enqueue script decides each, uniqueness windows
// included.
func (q *workQueue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	return q.enqueue(ctx, items, true)
}

// History reads the item's record, lease and events in one pipeline.
func (q *workQueue) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	var raw, leaseValue, evs, hb string
	err := q.read(ctx, func(ctx context.Context) error {
		p, ref := q.keys.queue(key.Queue), itemRef(key.Tenant, key.ID)
		pipe := q.client.Pipeline()
		recCmd := pipe.HGet(ctx, p+"items", ref)
		leaseCmd := pipe.HGet(ctx, p+"lease", ref)
		evCmd := pipe.HGet(ctx, p+"evs", ref)
		hbCmd := pipe.HGet(ctx, p+"evs", "h"+ref)
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		raw, leaseValue, evs, hb = recCmd.Val(), leaseCmd.Val(), evCmd.Val(), hbCmd.Val()
		return nil
	})
	if err != nil {
		return contract.History{}, err
	}
	rec, ok := parseRecord(raw)
	if !ok {
		return contract.History{}, contract.ErrNotFound
	}
	h := contract.History{Item: rec.item(key.Queue), Events: []contract.Event{}, Heartbeats: atoi64(hb)}
	if _, ok := leaseFromRecord(key.Queue, raw, leaseValue); ok {
		h.Item.State = contract.StateLeased
	}
	if evs != "" {
		dropped, rest, _ := strings.Cut(evs, ":")
		_, body, _ := strings.Cut(rest, ":")
		h.Dropped = atoi64(dropped)
		for body != "" {
			seg, tail, ok := cutLP(body)
			if !ok {
				break
			}
			if e, ok := parseEvent(seg); ok {
				h.Events = append(h.Events, e)
			}
			body = tail
		}
	}
	return h, nil
}

// parseEvent decodes one event (history_lib.lua's ev).
func parseEvent(s string) (contract.Event, bool) {
	var f [10]string
	rest := s
	for i := range f {
		seg, tail, ok := cutLP(rest)
		if !ok {
			return contract.Event{}, false
		}
		f[i], rest = seg, tail
	}
	e := contract.Event{Kind: contract.EventKind(f[0]), At: nsTime(f[1]), Worker: f[2], Attempt: int(atoi64(f[3])),
		Token: atoi64(f[4]), Error: f[5], NextDue: nsTime(f[6]), Signal: f[7], Reason: f[8],
		RunTime: time.Duration(atoi64(f[9]))}
	return e, true
}

// QueueEvents reads the queue's log after the cursor (the seq of the
// last event read) in one read-only script.
func (q *workQueue) QueueEvents(ctx context.Context, name, cursor string, limit int) (contract.EventPage, error) {
	page, _, err := q.queueEvents(ctx, name, cursor, limit)
	return page, err
}

// queueEvents is QueueEvents, returning too the seq of each event of the
// page (the cursor that reads on after it).
func (q *workQueue) queueEvents(ctx context.Context, name, cursor string, limit int) (contract.EventPage, []string, error) {
	if cursor != "" {
		if n, err := strconv.ParseInt(cursor, 10, 64); err != nil || n < 0 {
			return contract.EventPage{}, nil, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor this queue returned; pass \"\" or an EventPage's Next"}
		}
	}
	p := q.keys.queue(name)
	res, err := q.run(ctx, scriptQueueEvents, []string{p + "elog", p + "life"}, cursor, limit)
	if err != nil {
		return contract.EventPage{}, nil, err
	}
	parts, _ := res.([]any)
	if len(parts) != 3 {
		return contract.EventPage{}, nil, errMalformed("queue events")
	}
	last, _ := parts[0].(string)
	gap, _ := parts[1].(int64)
	rows, _ := parts[2].([]any)
	page := contract.EventPage{Events: make([]contract.Event, 0, len(rows)), Gap: gap == 1, Next: cursor}
	if cursor == "" {
		page.Next = last
	}
	seqs := make([]string, 0, len(rows))
	for _, row := range rows {
		s, _ := row.(string)
		seq, rest, ok := cutLP(s)
		if !ok {
			continue
		}
		t, rest, ok1 := cutLP(rest)
		id, rest, ok2 := cutLP(rest)
		e, ok3 := parseEvent(rest)
		page.Next = seq
		if ok1 && ok2 && ok3 {
			e.Tenant, e.ID = t, id
			page.Events = append(page.Events, e)
			seqs = append(seqs, seq)
		}
	}
	return page, seqs, nil
}

type malformedError string

func (e malformedError) Error() string { return "redisstore: malformed " + string(e) + " reply" }

func errMalformed(what string) error { return malformedError(what) }

// Prune runs the prune script once: at most PruneBatch removed, at most
// pruneScan of the oldest finished items read.
func (q *workQueue) Prune(ctx context.Context, name string) (int, error) {
	return q.prune(ctx, name, "")
}

// prune is Prune keeping keep of the shard's newest finished items under
// a retention Count ("" for the Count).
func (q *workQueue) prune(ctx context.Context, name, keep string) (int, error) {
	res, err := q.run(ctx, scriptPrune, q.queueKeys(name), nowMicros(q.clock.Now()), contract.PruneBatch, pruneScan, keep)
	if err != nil {
		return 0, err
	}
	n, _ := res.(int64)
	return int(n), nil
}

// Find reads the ID's lex range of the queue's ID index, then the
// records it names.
func (q *workQueue) Find(ctx context.Context, name, id string) ([]contract.Item, error) {
	p := q.keys.queue(name)
	li := lp(id)
	var ms []string
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		ms, err = q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: p + "ids", Start: "[" + li, Stop: "(" + li + ";", ByLex: true, Count: contract.MaxFound}).Result()
		return err
	})
	if err != nil {
		return nil, err
	}
	refs := make([]string, 0, len(ms))
	for _, m := range ms {
		if t, rest, ok := cutLP(strings.TrimPrefix(m, li)); ok && rest == "" {
			refs = append(refs, itemRef(t, id))
		}
	}
	items, err := q.itemsOf(ctx, name, refs)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, func(a, b contract.Item) int { return strings.Compare(a.Tenant, b.Tenant) })
	return items, nil
}

// itemsOf reads the records and leases of refs of queue name, leaving
// out those gone.
func (q *workQueue) itemsOf(ctx context.Context, name string, refs []string) ([]contract.Item, error) {
	out := []contract.Item{}
	if len(refs) == 0 {
		return out, nil
	}
	p := q.keys.queue(name)
	var recs, leases []any
	err := q.read(ctx, func(ctx context.Context) error {
		pipe := q.client.Pipeline()
		rc := pipe.HMGet(ctx, p+"items", refs...)
		lc := pipe.HMGet(ctx, p+"lease", refs...)
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return err
		}
		recs, leases = rc.Val(), lc.Val()
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range refs {
		raw, _ := recs[i].(string)
		rec, ok := parseRecord(raw)
		if !ok {
			continue
		}
		it := rec.item(name)
		lv, _ := leases[i].(string)
		if _, ok := leaseFromRecord(name, raw, lv); ok {
			it.State = contract.StateLeased
		}
		out = append(out, it)
	}
	return out, nil
}

// Finished cursors: "n" (older than) or "p" (newer than) and the FIN
// member, base64url.
func finCursor(dir byte, member string) string {
	return string(dir) + base64.RawURLEncoding.EncodeToString([]byte(member))
}

func parseFinCursor(c string) (byte, string, error) {
	bad := &contract.ValidationError{Field: "cursor", Problem: "is not a cursor this queue returned; pass \"\" or a FinishedPage's Next or Prev"}
	if len(c) < 2 || (c[0] != 'n' && c[0] != 'p') {
		return 0, "", bad
	}
	b, err := base64.RawURLEncoding.DecodeString(c[1:])
	if err != nil || len(b) < 16 {
		return 0, "", bad
	}
	if _, err := strconv.ParseUint(string(b[:16]), 16, 64); err != nil {
		return 0, "", bad
	}
	return c[0], string(b), nil
}

// finMember is the FIN member of an item that finished at us.
func finMember(us int64, tenant, id string) string {
	return hex16(us) + tenant + "\x00" + id
}

// finRef is the ref a FIN member names.
func finRef(m string) (string, bool) {
	if len(m) < 16 {
		return "", false
	}
	t, id, ok := strings.Cut(m[16:], "\x00")
	return itemRef(t, id), ok
}

// Finished pages through FIN (newest first) in chunks, keeping the items
// the query's filters select; a query by ID reads the ID index instead.
func (q *workQueue) Finished(ctx context.Context, fq contract.FinishedQuery) (contract.FinishedPage, error) {
	dir, from := byte(0), ""
	if fq.Page.Cursor != "" {
		var err error
		if dir, from, err = parseFinCursor(fq.Page.Cursor); err != nil {
			return contract.FinishedPage{}, err
		}
	}
	limit := fq.Page.Limit
	keep := func(it contract.Item) bool {
		if it.State != contract.StateCompleted && it.State != contract.StateCancelled {
			return false
		}
		us := it.FinishedAt.UnixMicro()
		return (fq.Tenant == "" || it.Tenant == fq.Tenant) && (fq.State == "" || it.State == fq.State) &&
			(fq.ID == "" || it.ID == fq.ID) &&
			(fq.Since.IsZero() || us >= fq.Since.UnixMicro()) && (fq.Until.IsZero() || us < fq.Until.UnixMicro())
	}
	// Bounds on the members from the time range: [lo, hi).
	lo, hi := "[0", "+"
	if !fq.Since.IsZero() {
		lo = "[" + hex16(max(fq.Since.UnixMicro(), 0))
	}
	if !fq.Until.IsZero() {
		hi = "(" + hex16(max(fq.Until.UnixMicro(), 0))
	}
	var got []contract.Item
	var members []string
	if fq.ID != "" {
		items, err := q.Find(ctx, fq.Queue, fq.ID)
		if err != nil {
			return contract.FinishedPage{}, err
		}
		for _, it := range items {
			if keep(it) {
				m := finMember(it.FinishedAt.UnixMicro(), it.Tenant, it.ID)
				if (dir == 'n' && m >= from) || (dir == 'p' && m <= from) {
					continue
				}
				got, members = append(got, it), append(members, m)
			}
		}
		idx := make([]int, len(got))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(members[b], members[a]) })
		g2, m2 := make([]contract.Item, len(idx)), make([]string, len(idx))
		for i, j := range idx {
			g2[i], m2[i] = got[j], members[j]
		}
		got, members = g2, m2
		if dir == 'p' {
			// The newer ones nearest the cursor: the last of them.
			if len(got) > limit+1 {
				got, members = got[len(got)-limit-1:], members[len(members)-limit-1:]
			}
			slices.Reverse(got)
			slices.Reverse(members)
		}
	} else {
		p := q.keys.queue(fq.Queue)
		// Newest first (Rev: start is the upper bound) from hi or below
		// the cursor; oldest first from just above a Prev cursor.
		start, stop := hi, lo
		switch dir {
		case 'n':
			start = "(" + from
		case 'p':
			start, stop = "("+from, hi
		}
		for len(got) <= limit {
			var ms []string
			err := q.read(ctx, func(ctx context.Context) error {
				var err error
				ms, err = q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: p + "fin", Start: start, Stop: stop, ByLex: true, Rev: dir != 'p', Count: 200}).Result()
				return err
			})
			if err != nil {
				return contract.FinishedPage{}, err
			}
			refs := make([]string, 0, len(ms))
			mm := make([]string, 0, len(ms))
			for _, m := range ms {
				if ref, ok := finRef(m); ok {
					refs, mm = append(refs, ref), append(mm, m)
				}
			}
			items, err := q.itemsByRef(ctx, fq.Queue, refs)
			if err != nil {
				return contract.FinishedPage{}, err
			}
			for i, it := range items {
				if it != nil && keep(*it) && finMember(it.FinishedAt.UnixMicro(), it.Tenant, it.ID) == mm[i] {
					got, members = append(got, *it), append(members, mm[i])
					if len(got) > limit {
						break
					}
				}
			}
			if len(ms) < 200 {
				break
			}
			start = "(" + ms[len(ms)-1]
		}
	}
	page := contract.FinishedPage{Items: []contract.Item{}}
	more := len(got) > limit
	if more {
		got, members = got[:limit], members[:limit]
	}
	if dir == 'p' {
		slices.Reverse(got)
		slices.Reverse(members)
	}
	page.Items = got
	if len(got) == 0 {
		if dir == 'p' {
			page.Next = finCursor('n', from)
		}
		if dir == 'n' {
			page.Prev = finCursor('p', from)
		}
		return page, nil
	}
	first, last := members[0], members[len(members)-1]
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

// itemsByRef is itemsOf keeping the positions: nil for a ref gone.
func (q *workQueue) itemsByRef(ctx context.Context, name string, refs []string) ([]*contract.Item, error) {
	out := make([]*contract.Item, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	var recs []any
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		recs, err = q.client.HMGet(ctx, q.keys.queue(name)+"items", refs...).Result()
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range refs {
		raw, _ := recs[i].(string)
		if rec, ok := parseRecord(raw); ok {
			it := rec.item(name)
			out[i] = &it
		}
	}
	return out, nil
}
