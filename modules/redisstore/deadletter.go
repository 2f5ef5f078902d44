package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/adkit/adk/modules/contract"
)

// deadScanBudget bounds how many dead letters one script call looks at, so
// a filter that matches few of 100,000 never blocks the server for long.
const deadScanBudget = 2000

// deadSource picks the dead letters to scan: one tenant's range of the
// per-tenant set when the filter names the tenant ("lp(tenant)"), the
// queue's set otherwise ("").
func deadSource(f contract.DeadLetterFilter) string {
	if f.Tenant != "" {
		return lp(f.Tenant)
	}
	return ""
}

type deadHit struct {
	seq  int64
	ref  string
	item contract.Item
}

// deadScan is where a scan starts: oldest first after the dead seq After,
// or (Newest) newest first below the exclusive bound Before, "" for the
// newest letter.
type deadScan struct {
	After  int64
	Newest bool
	Before string
}

// inRange reports whether a letter of dead seq seq lies where the scan
// runs.
func (d deadScan) inRange(seq int64) bool {
	if !d.Newest {
		return seq > d.After
	}
	return d.Before == "" || seq < atoi64(d.Before)
}

// scanDead calls fn with matching dead letters from where the scan
// starts, in dead order (or its reverse), until fn returns false or the
// set is exhausted.
func (q *workQueue) scanDead(ctx context.Context, f contract.DeadLetterFilter, from deadScan, want int, fn func(deadHit) bool) error {
	name := f.Queue
	prefix := q.keys.queue(name)
	if f.Tenant != "" && f.ID != "" {
		// At most one item can match: read it instead of scanning.
		var raw string
		err := q.read(ctx, func(ctx context.Context) error {
			v, err := q.client.HGet(ctx, prefix+"items", itemRef(f.Tenant, f.ID)).Result()
			raw = v
			return err
		})
		if err != nil {
			return err
		}
		rec, ok := parseRecord(raw)
		if !ok {
			return nil
		}
		it := rec.item(name)
		seq := atoi64(rec[fDeadSeq])
		if it.State == contract.StateDead && from.inRange(seq) && f.Matches(it) {
			fn(deadHit{seq: seq, ref: itemRef(f.Tenant, f.ID), item: it})
		}
		return nil
	}
	src := deadSource(f)
	pos, dir := strconv.FormatInt(from.After, 10), ""
	if from.Newest {
		pos, dir = from.Before, "newest"
	}
	keys := q.queueKeys(name)
	needle := contract.FoldASCII(f.ErrorContains)
	for {
		res, err := q.run(ctx, scriptDeadPage, keys, src, pos, deadScanBudget, want, f.Tenant, f.ID, needle, dir)
		if err != nil {
			return err
		}
		parts, _ := res.([]any)
		if len(parts) != 3 {
			return fmt.Errorf("redisstore: malformed dead-letter reply")
		}
		pos, _ = parts[0].(string)
		exhausted, _ := parts[1].(int64)
		found, _ := parts[2].([]any)
		for _, row := range found {
			pair, _ := row.([]any)
			if len(pair) != 2 {
				continue
			}
			s, _ := pair[0].(string)
			raw, _ := pair[1].(string)
			rec, ok := parseRecord(raw)
			if !ok {
				continue
			}
			it := rec.item(name)
			if !fn(deadHit{seq: atoi64(s), ref: itemRef(it.Tenant, it.ID), item: it}) {
				return nil
			}
		}
		if exhausted == 1 {
			return nil
		}
	}
}

// DeadLetters pages through the queue's dead letters that match the
// filter, oldest first or newest first. A tenant filter reads that
// tenant's own dead set; other filters are applied on the server while
// scanning. A cursor is the place just after the letter of its dead seq:
// oldest first goes on after it, newest first from that letter down.
func (q *workQueue) DeadLetters(ctx context.Context, dq contract.DeadLetterQuery) (contract.ItemPage, error) {
	limit := dq.Page.Limit
	after, err := parseCursor(dq.Page.Cursor)
	if err != nil {
		return contract.ItemPage{}, err
	}
	from := deadScan{After: after, Newest: dq.Newest}
	if dq.Newest && dq.Page.Cursor != "" {
		from.Before = strconv.FormatInt(after+1, 10)
	}
	out := contract.ItemPage{Items: []contract.Item{}}
	var last int64
	// A skip is passed over here, in the same bounded scan calls that
	// read the page.
	skip := dq.Skip
	want := int(min(int64(limit)+1+int64(skip), deadScanBudget))
	err = q.scanDead(ctx, dq.DeadLetterFilter, from, want, func(h deadHit) bool {
		if skip > 0 {
			skip--
			return true
		}
		if len(out.Items) == limit {
			out.Next = formatCursor(last)
			return false
		}
		out.Items = append(out.Items, h.item)
		last = h.seq
		if dq.Newest {
			last-- // the place below the letter, where the next page starts
		}
		return true
	})
	if err != nil {
		return contract.ItemPage{}, err
	}
	return out, nil
}

// Requeue moves the matching dead letters back to their queue, due now,
// with attempts reset (LastError stays for the record).
func (q *workQueue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return q.moveDead(ctx, f, "requeue")
}

// Purge deletes the matching dead letters.
func (q *workQueue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return q.moveDead(ctx, f, "purge")
}

// moveDead lists matching dead letters in chunks and acts on each chunk in
// a script that checks the filter again, so nothing outside it is touched.
func (q *workQueue) moveDead(ctx context.Context, f contract.DeadLetterFilter, mode string) (int, error) {
	name := f.Queue
	const chunk = 500
	total := 0
	var after int64
	for {
		var refs []any
		err := q.scanDead(ctx, f, deadScan{After: after}, chunk, func(h deadHit) bool {
			refs = append(refs, h.ref)
			after = h.seq
			return len(refs) < chunk
		})
		if err != nil {
			return total, err
		}
		if len(refs) == 0 {
			return total, nil
		}
		now := q.clock.Now()
		args := append([]any{mode, nowMicros(now), dueHex(now, now), nanos(now), wakeChannel(q.settings.Namespace, name),
			f.Tenant, f.ID, contract.FoldASCII(f.ErrorContains)}, refs...)
		res, err := q.run(ctx, scriptDeadMove, q.queueKeys(name), args...)
		if err != nil {
			return total, err
		}
		n, _ := res.(int64)
		total += int(n)
		if len(refs) < chunk || (f.Tenant != "" && f.ID != "") {
			return total, nil
		}
	}
}

// DeadLetterSummary counts the dead letters f matches and groups them by
// error. A count by queue or tenant alone reads the dead sets' sizes;
// anything else scans the letters in bounded script calls, as a listing
// does, and groups them here.
func (q *workQueue) DeadLetterSummary(ctx context.Context, f contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	out := contract.DeadLetterSummary{Groups: []contract.DeadLetterGroup{}}
	name := f.Queue
	if groups == 0 && f.ID == "" && f.ErrorContains == "" {
		prefix := q.keys.queue(name)
		err := q.read(ctx, func(ctx context.Context) error {
			var err error
			if f.Tenant == "" {
				// Dead seqs start at 1; the set may hold a placeholder below.
				out.Total, err = q.client.ZCount(ctx, prefix+"dead", "(0", "+inf").Result()
			} else {
				lt := lp(f.Tenant)
				out.Total, err = q.client.ZLexCount(ctx, prefix+"tdead", "("+lt, "("+lt+"g").Result()
			}
			return err
		})
		return out, err
	}
	tally := contract.NewErrorTally(groups)
	err := q.scanDead(ctx, f, deadScan{}, deadScanBudget, func(h deadHit) bool {
		tally.Add(h.item.LastError, h.item.DeadAt)
		return true
	})
	if err != nil {
		return contract.DeadLetterSummary{}, err
	}
	return tally.Summary(), nil
}
