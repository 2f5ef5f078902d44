package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"github.com/redis/go-redis/v9"
)

var (
	_ contract.LifecycleController = (*RedisWorkQueue)(nil)
	_ contract.LifecycleController = (*workQueue)(nil)
)

// ext is an item record's lifecycle extension (record_lib.lua's EXT):
// every field a string, "" for unset; times are unix ns, cu, the
// uniqueness window and the finish time unix us.
type ext struct {
	priority, snoozes                      string
	waitSignal, waitSince, waitUntil       string
	resSignal, resPayload, resTimedOut, at string
	cancelledAt, cancelReason, cancelledUs string
	uniqueFor, finishedUs                  string
}

func (x *ext) fields() []*string {
	return []*string{&x.priority, &x.snoozes, &x.waitSignal, &x.waitSince, &x.waitUntil,
		&x.resSignal, &x.resPayload, &x.resTimedOut, &x.at, &x.cancelledAt, &x.cancelReason, &x.cancelledUs,
		&x.uniqueFor, &x.finishedUs}
}

// encode is the extension as a record stores it.
func (x ext) encode() string {
	var b strings.Builder
	for _, f := range x.fields() {
		b.WriteString(lp(*f))
	}
	return b.String()
}

// parseExt decodes an extension; fields it lacks stay "".
func parseExt(v string) ext {
	var x ext
	fs := x.fields()
	rest := v
	for _, f := range fs {
		seg, tail, ok := cutLP(rest)
		if !ok {
			break
		}
		*f, rest = seg, tail
	}
	return x
}

// fill sets the lifecycle fields of it from x.
func (x ext) fill(it *contract.Item) {
	it.Priority = int(atoi64(x.priority))
	it.Snoozes = int(atoi64(x.snoozes))
	if x.waitSignal != "" && it.State == contract.StateWaiting {
		it.Waiting = &contract.WaitInfo{Signal: x.waitSignal, Since: nsTime(x.waitSince), Until: nsTime(x.waitUntil)}
	}
	if x.resSignal != "" {
		r := &contract.Resume{Signal: x.resSignal, TimedOut: x.resTimedOut == "1", At: nsTime(x.at)}
		if x.resPayload != "" {
			r.Payload = []byte(x.resPayload)
		}
		it.Resumed = r
	}
	if x.cancelledAt != "" {
		it.CancelledAt, it.CancelReason = nsTime(x.cancelledAt), x.cancelReason
	}
	if x.uniqueFor != "" {
		it.UniqueFor = time.Duration(atoi64(x.uniqueFor)) * time.Microsecond
	}
	switch it.State {
	case contract.StateCompleted:
		it.FinishedAt = usTime(x.finishedUs)
	case contract.StateCancelled:
		if x.finishedUs != "" {
			it.FinishedAt = usTime(x.finishedUs)
		} else {
			it.FinishedAt = usTime(x.cancelledUs)
		}
	}
}

// usTime is a decimal count of unix us as a time (zero for "").
func usTime(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	return time.UnixMicro(atoi64(v))
}

// notePaused reports whether a claim reply says the queue is paused,
// noting it in r.
func notePaused(rows []any, r *contract.ClaimReport) bool {
	if len(rows) != 1 {
		return false
	}
	if s, ok := rows[0].(string); !ok || s != "paused" {
		return false
	}
	if r != nil {
		r.QueuePaused = true
	}
	return true
}

// Pause pauses the queue, or one tenant of it, in one script.
func (q *workQueue) Pause(ctx context.Context, name, tenant string) error {
	_, err := q.run(ctx, scriptPause, q.queueKeys(name), "1", tenant, wakeChannel(q.settings.Namespace, name))
	return err
}

// Resume ends a pause and wakes the queue's claimers.
func (q *workQueue) Resume(ctx context.Context, name, tenant string) error {
	_, err := q.run(ctx, scriptPause, q.queueKeys(name), "0", tenant, wakeChannel(q.settings.Namespace, name))
	return err
}

// Paused reads the queue's pauses from its lifecycle hash.
func (q *workQueue) Paused(ctx context.Context, name string) (contract.PauseState, error) {
	out := contract.PauseState{Queue: name, Tenants: []string{}}
	var h map[string]string
	err := q.read(ctx, func(ctx context.Context) error {
		var err error
		h, err = q.client.HGetAll(ctx, q.keys.queue(name)+"life").Result()
		return err
	})
	if err != nil {
		return out, err
	}
	out.Paused = h["q"] == "1"
	out.Tenants = pausedTenants(h)
	return out, nil
}

// pausedTenants lists the tenants a lifecycle hash marks paused, sorted.
func pausedTenants(h map[string]string) []string {
	out := []string{}
	for f, v := range h {
		if rest, ok := strings.CutPrefix(f, "t"); ok && v == "1" {
			if t, tail, ok := cutLP(rest); ok && tail == "" {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// stateOfLetter maps the state letters of the lifecycle scripts.
func stateOfLetter(s string) contract.ItemState {
	switch s {
	case "q":
		return contract.StateQueued
	case "l":
		return contract.StateLeased
	case "w":
		return contract.StateWaiting
	case "d":
		return contract.StateDead
	case "c":
		return contract.StateCancelled
	case "k":
		return contract.StateCompleted
	}
	return ""
}

// cancelRefs runs the cancel script over refs (of queue name) with the
// states allowed and returns the letter per ref.
func (q *workQueue) cancelRefs(ctx context.Context, name, reason, allowed string, report bool, refs []string) ([]string, error) {
	now := q.clock.Now()
	rep := "0"
	if report {
		rep = "1"
	}
	args := make([]any, 0, 6+len(refs))
	args = append(args, nowMicros(now), nanos(now), reason, allowed, rep, wakeChannel(q.settings.Namespace, name))
	for _, r := range refs {
		args = append(args, r)
	}
	res, err := q.run(ctx, scriptCancel, q.queueKeys(name), args...)
	if err != nil {
		return nil, err
	}
	vs, _ := res.([]any)
	out := make([]string, len(refs))
	for i := range out {
		if i < len(vs) {
			out[i], _ = vs[i].(string)
		}
	}
	return out, nil
}

// Cancel cancels one item, or marks its lease, in one script.
func (q *workQueue) Cancel(ctx context.Context, key contract.ItemKey, reason string) (contract.ItemState, error) {
	got, err := q.cancelRefs(ctx, key.Queue, reason, "qwldc", true, []string{itemRef(key.Tenant, key.ID)})
	if err != nil {
		return "", err
	}
	if got[0] == "n" {
		return "", contract.ErrNotFound
	}
	return stateOfLetter(got[0]), nil
}

// cancelChunk bounds the refs one cancel or purge script call takes.
const cancelChunk = 256

// matching lists the refs of the items of f.Queue that f selects, read
// from the queue's indexes (no SCAN): the tenant's lex range of READY
// (or all of it) for queued items, WAITS' members for waiting ones,
// LEASES' for leased ones, TDEAD's lex range for dead letters. It reads
// pages of 1000; a lease already marked is left out.
func (q *workQueue) matching(ctx context.Context, f contract.CancelFilter) ([]string, error) {
	p := q.keys.queue(f.Queue)
	keep := func(ref string) bool {
		t, id, ok := parseRef(ref)
		return ok && (f.Tenant == "" || t == f.Tenant) && strings.HasPrefix(id, f.IDPrefix)
	}
	var out []string
	lexStart, lexStop := "[0", "+"
	if f.Tenant != "" {
		lt := lp(f.Tenant)
		lexStart, lexStop = "["+lt, "("+lt+"q"
	}
	lexRange := func(key string, refOf func(m string) string) error {
		start := lexStart
		for {
			var ms []string
			err := q.read(ctx, func(ctx context.Context) error {
				var err error
				ms, err = q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: start, Stop: lexStop, ByLex: true, Count: 1000}).Result()
				return err
			})
			if err != nil {
				return err
			}
			for _, m := range ms {
				if ref := refOf(m); ref != "" && keep(ref) {
					out = append(out, ref)
				}
			}
			if len(ms) < 1000 {
				return nil
			}
			start = "(" + ms[len(ms)-1]
		}
	}
	scoreRange := func(key string) ([]string, error) {
		var refs []string
		for off := int64(0); ; off += 1000 {
			var ms []string
			err := q.read(ctx, func(ctx context.Context) error {
				var err error
				ms, err = q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: "-inf", Stop: "(+inf", ByScore: true, Offset: off, Count: 1000}).Result()
				return err
			})
			if err != nil {
				return nil, err
			}
			for _, m := range ms {
				if keep(m) {
					refs = append(refs, m)
				}
			}
			if len(ms) < 1000 {
				return refs, nil
			}
		}
	}
	live := f.State == ""
	if live || f.State == contract.StateQueued {
		if err := lexRange(p+"ready", readyRef); err != nil {
			return nil, err
		}
	}
	if live || f.State == contract.StateWaiting {
		refs, err := scoreRange(p + "waits")
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
	}
	if live || f.State == contract.StateLeased {
		refs, err := scoreRange(p + "leases")
		if err != nil {
			return nil, err
		}
		// A lease already marked is not touched or counted again.
		for start := 0; start < len(refs); start += 1000 {
			chunk := refs[start:min(start+1000, len(refs))]
			var vals []any
			err := q.read(ctx, func(ctx context.Context) error {
				var err error
				vals, err = q.client.HMGet(ctx, p+"items", chunk...).Result()
				return err
			})
			if err != nil {
				return nil, err
			}
			for i, v := range vals {
				s, _ := v.(string)
				if rec, ok := parseRecord(s); ok && rec[fState] == "q" && parseExt(rec[fExt]).cancelledAt == "" {
					out = append(out, chunk[i])
				}
			}
		}
	}
	if f.State == contract.StateDead {
		if err := lexRange(p+"tdead", func(m string) string {
			_, rest, ok := cutLP(m)
			if !ok || len(rest) < 16 {
				return ""
			}
			return rest[16:]
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readyRef is the ref a READY member ends with ("" for the placeholder).
func readyRef(m string) string {
	t, rest, ok := cutLP(m)
	if !ok {
		return ""
	}
	_ = t
	if strings.HasPrefix(rest, "p") {
		rest = rest[1:]
		if len(rest) < 2 {
			return ""
		}
		rest = rest[2:]
	}
	if len(rest) < 32 {
		return ""
	}
	return rest[32:]
}

// allowedLetters are the state letters the cancel script accepts for f.
func allowedLetters(f contract.CancelFilter) string {
	switch f.State {
	case "":
		return "qwl"
	case contract.StateQueued:
		return "q"
	case contract.StateWaiting:
		return "w"
	case contract.StateLeased:
		return "l"
	case contract.StateDead:
		return "d"
	}
	return ""
}

// CancelMatching lists what f selects from the queue's indexes, then
// cancels it in script calls of cancelChunk refs, each re-checking every
// item against f's states.
func (q *workQueue) CancelMatching(ctx context.Context, f contract.CancelFilter, reason string) (int, error) {
	refs, err := q.matching(ctx, f)
	if err != nil {
		return 0, err
	}
	n := 0
	for start := 0; start < len(refs); start += cancelChunk {
		got, err := q.cancelRefs(ctx, f.Queue, reason, allowedLetters(f), false, refs[start:min(start+cancelChunk, len(refs))])
		if err != nil {
			return n, err
		}
		for _, g := range got {
			switch g {
			case "q", "w", "l", "d":
				n++
			}
		}
	}
	return n, nil
}

// CountMatching counts what CancelMatching would touch now.
func (q *workQueue) CountMatching(ctx context.Context, f contract.CancelFilter) (int, error) {
	refs, err := q.matching(ctx, f)
	if err != nil {
		return 0, err
	}
	seen := make(map[string]bool, len(refs))
	for _, r := range refs {
		seen[r] = true
	}
	return len(seen), nil
}

// PurgeCancelled deletes the queue's items cancelled before before, a
// chunk of the CANCELS index per script call.
func (q *workQueue) PurgeCancelled(ctx context.Context, name string, before time.Time) (int, error) {
	key := q.keys.queue(name) + "cancels"
	cut := micros(before)
	total := 0
	for {
		var refs []string
		err := q.read(ctx, func(ctx context.Context) error {
			var err error
			refs, err = q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: "-inf", Stop: "(" + cut, ByScore: true, Count: cancelChunk}).Result()
			return err
		})
		if err != nil || len(refs) == 0 {
			return total, err
		}
		args := make([]any, 0, 1+len(refs))
		args = append(args, cut)
		for _, r := range refs {
			args = append(args, r)
		}
		res, err := q.run(ctx, scriptPurgeCancelled, q.queueKeys(name), args...)
		if err != nil {
			return total, err
		}
		n, _ := res.(int64)
		total += int(n)
		if n == 0 || len(refs) < cancelChunk {
			return total, nil
		}
	}
}

// parkReply maps a park script reply for lease l.
func parkReply(res any, l contract.Lease) (int64, error) {
	n, _ := res.(int64)
	switch {
	case n == 0:
		return 0, &contract.LeaseLostError{Items: []contract.ItemKey{l.Key()}}
	case n == 2:
		return 0, &contract.CancelledError{Items: []contract.ItemKey{l.Key()}}
	}
	return n, nil
}

// Snooze puts the item back due at now+d, or dead-letters it at the
// policy's cap, in one script fenced on the token.
func (q *workQueue) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	name := l.Item.Queue
	snoozes := l.Item.Snoozes
	id := nonce()
	for range 4 {
		now := q.clock.Now()
		dec := q.policy.DecideSnooze(snoozes, d, now)
		retry, due, dx, nb := "0", "", "", ""
		if dec.Retry {
			retry, due, dx, nb = "1", dueMicros(dec.At, now), dueHex(dec.At, now), nanos(dec.At)
		}
		res, err := q.run(ctx, scriptPark, q.queueKeys(name), nowMicros(now), nanos(now), wakeChannel(q.settings.Namespace, name),
			itemRef(l.Item.Tenant, l.Item.ID), l.Token, id, "s", snoozes, retry, due, dx, nb, contract.SnoozeLimitText(snoozes))
		if err != nil {
			return policy.Decision{}, err
		}
		n, err := parkReply(res, l)
		if err != nil {
			return policy.Decision{}, err
		}
		if n == 1 {
			return dec, nil
		}
		snoozes = int(-n - 1) // the lease carried a stale count: decide on the stored one
	}
	return policy.Decision{}, fmt.Errorf("redisstore: snoozes of %q kept changing during Snooze", l.Item.ID)
}

// Wait parks the item until a signal or its timeout, in one script
// fenced on the token.
func (q *workQueue) Wait(ctx context.Context, l contract.Lease, w contract.WaitRequest) error {
	name := l.Item.Queue
	now := q.clock.Now()
	until := now.Add(w.Timeout)
	res, err := q.run(ctx, scriptPark, q.queueKeys(name), nowMicros(now), nanos(now), wakeChannel(q.settings.Namespace, name),
		itemRef(l.Item.Tenant, l.Item.ID), l.Token, nonce(), "w", w.Signal, nanos(until), micros(until))
	if err != nil {
		return err
	}
	_, err = parkReply(res, l)
	return err
}

// Signal resumes the item if it waits for signal: the check and the
// write are one script, so a signal resumes a wait once.
func (q *workQueue) Signal(ctx context.Context, key contract.ItemKey, signal string, payload []byte) error {
	now := q.clock.Now()
	res, err := q.run(ctx, scriptSignal, q.queueKeys(key.Queue), nowMicros(now), nanos(now), dueHex(now, now),
		wakeChannel(q.settings.Namespace, key.Queue), itemRef(key.Tenant, key.ID), signal, string(payload))
	if err != nil {
		return err
	}
	row, _ := res.([]any)
	if len(row) == 0 {
		return fmt.Errorf("redisstore: malformed signal reply")
	}
	switch n, _ := row[0].(int64); n {
	case 1:
		return nil
	case 0:
		return contract.ErrNotFound
	}
	nw := &contract.NotWaitingError{Key: key, Signal: signal}
	if len(row) == 3 {
		st, _ := row[1].(string)
		nw.State = stateOfLetter(st)
		nw.Waiting, _ = row[2].(string)
	}
	return nw
}

// Waiting pages through the queue's waiting items by when they began to
// wait (the PARKED index); the cursor is the offset of the next page.
func (q *workQueue) Waiting(ctx context.Context, name string, page contract.PageRequest) (contract.ItemPage, error) {
	out := contract.ItemPage{Items: []contract.Item{}}
	var off int64
	if page.Cursor != "" {
		n, err := strconv.ParseInt(page.Cursor, 10, 64)
		if err != nil || n < 0 {
			return out, &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this store returned; pass the Next of the previous page"}
		}
		off = n
	}
	p := q.keys.queue(name)
	err := q.read(ctx, func(ctx context.Context) error {
		out.Items, out.Next = out.Items[:0], ""
		refs, err := q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: p + "parked", Start: "-inf", Stop: "(+inf", ByScore: true,
			Offset: off, Count: int64(page.Limit) + 1}).Result()
		if err != nil || len(refs) == 0 {
			return err
		}
		more := len(refs) > page.Limit
		if more {
			refs = refs[:page.Limit]
			out.Next = strconv.FormatInt(off+int64(page.Limit), 10)
		}
		vals, err := q.client.HMGet(ctx, p+"items", refs...).Result()
		if err != nil {
			return err
		}
		for _, v := range vals {
			s, _ := v.(string)
			if rec, ok := parseRecord(s); ok {
				out.Items = append(out.Items, rec.item(name))
			}
		}
		return nil
	})
	return out, err
}
