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

// scanDead calls fn with matching dead letters after cursor, in dead
// order, until fn returns false or the set is exhausted.
func (q *RedisWorkQueue) scanDead(ctx context.Context, f contract.DeadLetterFilter, after int64, want int, fn func(deadHit) bool) error {
	name := contract.QueueName(f.Queue)
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
		if it.State == contract.StateDead && seq > after && f.Matches(it) {
			fn(deadHit{seq: seq, ref: itemRef(f.Tenant, f.ID), item: it})
		}
		return nil
	}
	src := deadSource(f)
	pos := strconv.FormatInt(after, 10)
	keys := q.queueKeys(name)
	for {
		res, err := q.run(ctx, scriptDeadPage, keys, src, pos, deadScanBudget, want, f.Tenant, f.ID, f.ErrorContains)
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
// filter, oldest first. A tenant filter reads that tenant's own dead set;
// other filters are applied on the server while scanning.
func (q *RedisWorkQueue) DeadLetters(ctx context.Context, dq contract.DeadLetterQuery) (contract.ItemPage, error) {
	if err := contract.ValidateFilter(dq.DeadLetterFilter); err != nil {
		return contract.ItemPage{}, err
	}
	limit, err := contract.ValidatePage(dq.Page)
	if err != nil {
		return contract.ItemPage{}, err
	}
	after, err := parseCursor(dq.Page.Cursor)
	if err != nil {
		return contract.ItemPage{}, err
	}
	out := contract.ItemPage{Items: []contract.Item{}}
	var last int64
	err = q.scanDead(ctx, dq.DeadLetterFilter, after, limit+1, func(h deadHit) bool {
		if len(out.Items) == limit {
			out.Next = formatCursor(last)
			return false
		}
		out.Items = append(out.Items, h.item)
		last = h.seq
		return true
	})
	if err != nil {
		return contract.ItemPage{}, err
	}
	return out, nil
}

// Requeue moves the matching dead letters back to their queue, due now,
// with attempts reset (LastError stays for the record).
func (q *RedisWorkQueue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return q.moveDead(ctx, f, "requeue")
}

// Purge deletes the matching dead letters.
func (q *RedisWorkQueue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return q.moveDead(ctx, f, "purge")
}

// moveDead lists matching dead letters in chunks and acts on each chunk in
// a script that checks the filter again, so nothing outside it is touched.
func (q *RedisWorkQueue) moveDead(ctx context.Context, f contract.DeadLetterFilter, mode string) (int, error) {
	if err := contract.ValidateFilter(f); err != nil {
		return 0, err
	}
	name := contract.QueueName(f.Queue)
	const chunk = 500
	total := 0
	var after int64
	for {
		var refs []any
		err := q.scanDead(ctx, f, after, chunk, func(h deadHit) bool {
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
			f.Tenant, f.ID, f.ErrorContains}, refs...)
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
