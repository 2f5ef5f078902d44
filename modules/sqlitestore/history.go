package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Finished items and their history (contract.HistoryKeeper). A queue's
// retention is its row of adk_retention; a queue without one, or with a
// row of zeros, completes and records exactly as before: the complete's
// DELETE carries the check in the same statement, and the claim reads
// the cap of events from the statement that reads the queue's counters.
// Every event is written by the transaction of the transition it records,
// into adk_events (the item's, capped) and adk_event_log (the queue's,
// its latest contract.QueueEventLog).

var _ contract.HistoryKeeper = (*workQueue)(nil)

// record appends ev to the history of the item key and to its queue's
// log, when the queue records events (cap > 0). logOnly leaves the item's
// own events alone (the item is being deleted). It is a batch of one.
func record(ctx context.Context, e execer, capN int, key contract.ItemKey, ev contract.Event, logOnly bool) error {
	var b eventBatch
	b.add(capN, key, ev, logOnly)
	return b.flush(ctx, e)
}

// eventBatch holds the events of a batch's transitions (a claim's, a
// complete's) and the finished items they count, for flush to write
// together: the events of a run of one queue's by one multi-row INSERT
// into adk_events and one into adk_event_log, their log numbers taken by
// one UPDATE and the log trimmed once, in the order the events were
// added. A single transition's event is a batch of one (record).
type eventBatch struct {
	rows     []pendingEvent
	finished map[string]int
}

// pendingEvent is an event a batch holds.
type pendingEvent struct {
	capN    int
	key     contract.ItemKey
	ev      contract.Event
	logOnly bool
	// runFromClaim: ev's RunTime is the time since the item's last
	// claimed event, read when the batch is written.
	runFromClaim bool
}

// add holds ev of the item key for flush when the queue records events
// (capN > 0); logOnly: the item is being deleted, so ev goes to the
// queue's log only.
func (b *eventBatch) add(capN int, key contract.ItemKey, ev contract.Event, logOnly bool) {
	if capN > 0 {
		b.rows = append(b.rows, pendingEvent{capN: capN, key: key, ev: ev, logOnly: logOnly})
	}
}

// addRun holds ev, a completed event whose run time is to be read from
// the item's last claimed event, for flush.
func (b *eventBatch) addRun(capN int, key contract.ItemKey, ev contract.Event) {
	if capN > 0 {
		b.rows = append(b.rows, pendingEvent{capN: capN, key: key, ev: ev, runFromClaim: true})
	}
}

// finish counts one more finished item of the queue.
func (b *eventBatch) finish(queue string) {
	if b.finished == nil {
		b.finished = map[string]int{}
	}
	b.finished[queue]++
}

// flush writes what the batch holds and empties it. A queue's count of
// finished items goes with the numbers its first events take.
func (b *eventBatch) flush(ctx context.Context, e execer) error {
	finished := b.finished
	b.finished = nil
	rows := b.rows
	b.rows = nil
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].key.Queue == rows[i].key.Queue && rows[j].capN == rows[i].capN {
			j++
		}
		queue := rows[i].key.Queue
		if err := writeEvents(ctx, e, rows[i:j], finished[queue]); err != nil {
			return err
		}
		delete(finished, queue)
		i = j
	}
	for queue, n := range finished {
		if err := finishedAdd(ctx, e, queue, n); err != nil {
			return err
		}
	}
	return nil
}

// eventChunk is how many events one INSERT writes at most (14 variables
// each, well under SQLite's limit).
const eventChunk = 64

// logInsertRows appends n entries to a queue's log.
var logInsertRows = &rowsSQL{build: func(n int) string {
	return valuesText("INSERT INTO adk_event_log (queue, seq, tenant, id, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time) VALUES ",
		n, func(int) string { return eventValues }, "")
}}

// eventValues is the row of parameters of one event.
const eventValues = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

// eventLastRows reads the latest event number of each of n items of
// one queue (?1), each a (tenant, id) pair of parameters after it, and
// when its last claimed event happened (NULL: none is kept); an item
// with no events has no row.
var eventLastRows = &rowsSQL{build: func(n int) string {
	return valuesText("SELECT tenant, id, max(n), max(CASE WHEN kind = 'claimed' THEN at END) FROM adk_events WHERE queue = ?1 AND (tenant, id) IN (VALUES ",
		n, func(r int) string { return fmt.Sprintf("(?%d, ?%d)", 2*r+2, 2*r+3) }, ") GROUP BY tenant, id")
}}

// eventInsertRows appends n events to items' own events, each row
// numbered by the caller.
var eventInsertRows = &rowsSQL{build: func(n int) string {
	return valuesText("INSERT INTO adk_events (queue, tenant, id, n, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time) VALUES ",
		n, func(int) string { return eventValues }, "")
}}

// logTrimStep is how many numbers a queue's log takes between trims: the
// log holds its latest contract.QueueEventLog entries and up to this
// many older ones, which QueueEvents does not return, so a trim deletes
// them in one go rather than a few with every write.
const logTrimStep = 256

// writeEvents writes the events of one queue, all with the same cap,
// and adds finished to the queue's count of finished items.
func writeEvents(ctx context.Context, e execer, rows []pendingEvent, finished int) error {
	queue, capN := rows[0].key.Queue, rows[0].capN
	// The item's own events. An item's number is read from the rows
	// before the statement, so a chunk holds an item at most once.
	var chunk []int
	seen := map[contract.ItemKey]bool{}
	for i := 0; i <= len(rows); i++ {
		if i == len(rows) || len(chunk) == eventChunk || (!rows[i].logOnly && seen[rows[i].key]) {
			if err := insertItemEvents(ctx, e, capN, rows, chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
			clear(seen)
		}
		if i < len(rows) && !rows[i].logOnly {
			chunk = append(chunk, i)
			seen[rows[i].key] = true
		}
	}
	// The queue's log: len(rows) numbers taken at once, the latest
	// contract.QueueEventLog kept (trimmed when the numbers pass a
	// multiple of logTrimStep).
	var last int64
	if err := e.QueryRowContext(ctx, logTakeManySQL, queue, len(rows), finished).Scan(&last); err != nil {
		return err
	}
	seq := last - int64(len(rows)) + 1
	for i := 0; i < len(rows); i += eventChunk {
		part := rows[i:min(i+eventChunk, len(rows))]
		args := make([]any, 0, 14*len(part))
		for _, p := range part {
			ev := p.ev
			args = append(args, queue, seq, p.key.Tenant, p.key.ID, string(ev.Kind), nanos(ev.At), ev.Worker, ev.Attempt, ev.Token,
				ev.Error, eventDue(ev), ev.Signal, ev.Reason, int64(ev.RunTime))
			seq++
		}
		if _, err := e.ExecContext(ctx, logInsertRows.get(len(part)), args...); err != nil {
			return err
		}
	}
	if last > contract.QueueEventLog && last/logTrimStep != (last-int64(len(rows)))/logTrimStep {
		if _, err := e.ExecContext(ctx, logTrimSQL, queue, last-contract.QueueEventLog); err != nil {
			return err
		}
	}
	return nil
}

// insertItemEvents appends the events rows[chunk] to their items' own
// events, numbered after each item's latest, and deletes the oldest
// beyond the cap of the items that now have more. The numbers, and the
// time of each item's last claim for the events that take their run time
// from it, are read first by one statement for the chunk rather than by
// a subquery of each inserted row: SQLite compiles such an INSERT again
// on every run.
func insertItemEvents(ctx context.Context, e execer, capN int, rows []pendingEvent, chunk []int) error {
	if len(chunk) == 0 {
		return nil
	}
	queue := rows[chunk[0]].key.Queue
	args := make([]any, 0, 14*len(chunk))
	args = append(args, queue)
	for _, i := range chunk {
		args = append(args, rows[i].key.Tenant, rows[i].key.ID)
	}
	type ref struct{ tenant, id string }
	type top struct {
		n       int64
		claimed sql.NullInt64
	}
	last := make(map[ref]top, len(chunk))
	res, err := e.QueryContext(ctx, eventLastRows.get(len(chunk)), args...)
	if err != nil {
		return err
	}
	for res.Next() {
		var (
			r ref
			t top
		)
		if err := res.Scan(&r.tenant, &r.id, &t.n, &t.claimed); err != nil {
			res.Close()
			return err
		}
		last[r] = t
	}
	res.Close()
	if err := res.Err(); err != nil {
		return err
	}
	args = args[:0]
	type excess struct {
		key contract.ItemKey
		n   int64 // how many of the item's events are past the cap
	}
	var trim []excess
	for _, i := range chunk {
		p := &rows[i]
		t := last[ref{p.key.Tenant, p.key.ID}]
		if p.runFromClaim && t.claimed.Valid {
			if d := nanos(p.ev.At) - t.claimed.Int64; d > 0 {
				p.ev.RunTime = time.Duration(d)
			}
		}
		if t.n+1 > int64(capN) {
			trim = append(trim, excess{p.key, t.n + 1 - int64(capN)})
		}
		ev := p.ev
		args = append(args, queue, p.key.Tenant, p.key.ID, t.n+1, string(ev.Kind), nanos(ev.At), ev.Worker, ev.Attempt, ev.Token,
			ev.Error, eventDue(ev), ev.Signal, ev.Reason, int64(ev.RunTime))
	}
	if _, err := e.ExecContext(ctx, eventInsertRows.get(len(chunk)), args...); err != nil {
		return err
	}
	for _, x := range trim {
		if _, err := e.ExecContext(ctx, eventTrimSQL, queue, x.key.Tenant, x.key.ID, x.n); err != nil {
			return err
		}
	}
	return nil
}

// eventDue is the event's NextDue in nanoseconds, 0 for none.
func eventDue(ev contract.Event) int64 {
	if ev.NextDue.IsZero() {
		return 0
	}
	return nanos(ev.NextDue)
}

// eventsCap reads the queue's cap of events per item (0: none recorded).
func eventsCap(ctx context.Context, e execer, queue string) (int, error) {
	var n int
	err := e.QueryRowContext(ctx, retentionEventsSQL, queue).Scan(&n)
	return n, err
}

// finishedAdd counts delta more finished items of the queue.
func finishedAdd(ctx context.Context, e execer, queue string, delta int) error {
	if delta == 0 {
		return nil
	}
	_, err := e.ExecContext(ctx, finishedAddSQL, queue, delta)
	return err
}

// retention is a queue's row of adk_retention.
type retention struct {
	contract.Retention
	finished int64
}

// retains says the queue keeps finished items or records events, so that
// no complete's DELETE removes its items.
func (r retention) retains() bool { return r.keepsFinished() || r.Events > 0 }

// keepsFinished says the queue keeps its completed items.
func (r retention) keepsFinished() bool { return r.Age > 0 || r.Count > 0 }

// completeKeepRows completes n leased items of one queue (?1) at ?2,
// keeping them: finished at ?2, each one's window (if it asked for one)
// closing unique_for after, its lease released. Each item is a (tenant,
// id, token) triple of parameters after those; a lease a cancel marked,
// or that no longer holds its item, keeps nothing.
var completeKeepRows = &rowsSQL{build: func(n int) string {
	return valuesText("WITH l(tenant, id, token) AS (VALUES ",
		n, func(r int) string { return fmt.Sprintf("(?%d, ?%d, ?%d)", 3*r+3, 3*r+4, 3*r+5) }, `)
UPDATE adk_work SET state = 'completed', finished_at = ?2,
    unique_until = CASE WHEN unique_for > 0 THEN ?2 + unique_for ELSE 0 END,
    worker = '', lease_expires_at = 0, token = 0
FROM l
WHERE adk_work.queue = ?1 AND adk_work.tenant = l.tenant AND adk_work.id = l.id AND adk_work.state = 'leased'
  AND adk_work.token = l.token AND adk_work.cancelled_at = 0
RETURNING tenant, id, attempts`)
}}

// keepAll completes, keeping them, the items of queue that the leases
// among ls hold (live and unmarked), in one statement per eventChunk
// leases, and returns the attempts of each item it kept. A lease it did
// not keep was lost or marked by a cancel.
func keepAll(ctx context.Context, e execer, queue string, ls []contract.Lease, now time.Time) (map[contract.ItemKey]int, error) {
	var mine []contract.Lease
	for _, l := range ls {
		if l.Key().Queue == queue {
			mine = append(mine, l)
		}
	}
	got := make(map[contract.ItemKey]int, len(mine))
	for len(mine) > 0 {
		part := mine[:min(len(mine), eventChunk)]
		mine = mine[len(part):]
		args := make([]any, 0, 2+3*len(part))
		args = append(args, queue, nanos(now))
		for _, l := range part {
			k := l.Key()
			args = append(args, k.Tenant, k.ID, l.Token)
		}
		rows, err := e.QueryContext(ctx, completeKeepRows.get(len(part)), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			k := contract.ItemKey{Queue: queue}
			var a int
			if err := rows.Scan(&k.Tenant, &k.ID, &a); err != nil {
				rows.Close()
				return nil, err
			}
			got[k] = a
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return got, nil
}

func readRetention(ctx context.Context, e execer, queue string) (retention, error) {
	var r retention
	var age int64
	err := e.QueryRowContext(ctx, retentionGetSQL, queue).Scan(&age, &r.Count, &r.Events, &r.finished)
	if errors.Is(err, sql.ErrNoRows) {
		return retention{}, nil
	}
	r.Age = time.Duration(age)
	return r, err
}

// completeKept completes the lease l of a queue that keeps no finished
// item (r, its retention) but records events, or whose item asked for a
// uniqueness window: the leases the complete's DELETE leaves. The item
// goes, with its events, unless it asked for a window; then it stays as
// completed (keepAll). It reports false when l does not hold a live,
// unmarked lease on its item. Its events and its count of finished
// items go to b.
func completeKept(ctx context.Context, e execer, b *eventBatch, l contract.Lease, r retention, now time.Time) (bool, error) {
	k := l.Key()
	var attempts int
	err := e.QueryRowContext(ctx, completeDropSQL, k.Queue, k.Tenant, k.ID, l.Token).Scan(&attempts)
	if errors.Is(err, sql.ErrNoRows) {
		got, err := keepAll(ctx, e, k.Queue, []contract.Lease{l}, now)
		if err != nil {
			return false, err
		}
		a, kept := got[k]
		if kept {
			keptEvent(b, r, l, a, now)
		}
		return kept, nil
	}
	if err != nil {
		return false, err
	}
	ev := contract.Event{Kind: contract.EventCompleted, At: now, Worker: l.Worker, Attempt: attempts + 1}
	if r.Events > 0 {
		var claimedAt sql.NullInt64
		if err := e.QueryRowContext(ctx, eventLastClaimSQL, k.Queue, k.Tenant, k.ID).Scan(&claimedAt); err != nil {
			return false, err
		}
		if claimedAt.Valid {
			if d := nanos(now) - claimedAt.Int64; d > 0 {
				ev.RunTime = time.Duration(d)
			}
		}
	}
	if _, err := e.ExecContext(ctx, eventsDeleteSQL, k.Queue, k.Tenant, k.ID); err != nil {
		return false, err
	}
	b.add(r.Events, k, ev, true)
	return true, nil
}

// keptEvent counts the item of l, kept as completed (keepAll) after a
// life of attempts, as finished, and gives b its completed event, whose
// run time b reads from the item's last claim.
func keptEvent(b *eventBatch, r retention, l contract.Lease, attempts int, now time.Time) {
	k := l.Key()
	b.finish(k.Queue)
	b.addRun(r.Events, k, contract.Event{Kind: contract.EventCompleted, At: now, Worker: l.Worker, Attempt: attempts + 1})
}

// SetRetention sets what the queue keeps, and counts its finished items
// anew.
func (q *workQueue) SetRetention(ctx context.Context, queue string, r contract.Retention) error {
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		_, err := e.ExecContext(ctx, retentionPutSQL, queue, int64(r.Age), r.Count, r.Events)
		return err
	})
	return queueErr(ctx, err)
}

// Retention returns what the queue keeps.
func (q *workQueue) Retention(ctx context.Context, queue string) (contract.Retention, error) {
	var r retention
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		var err error
		r, err = readRetention(ctx, e, queue)
		return err
	})
	if err != nil {
		return contract.Retention{}, queueErr(ctx, err)
	}
	return r.Retention, nil
}

// EnqueueReport enqueues as Enqueue does and says which were duplicates.
func (q *workQueue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	return q.enqueue(ctx, true, items)
}

// History returns the item and its recorded events.
func (q *workQueue) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	var h contract.History
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		var hb int64
		it, _, err := scanItem(e.QueryRowContext(ctx, historyItemSQL, key.Queue, key.Tenant, key.ID), &hb)
		if errors.Is(err, sql.ErrNoRows) {
			return contract.ErrNotFound
		}
		if err != nil {
			return err
		}
		h.Item, h.Heartbeats = it, hb
		rows, err := e.QueryContext(ctx, eventsItemSQL, key.Queue, key.Tenant, key.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		h.Events = []contract.Event{}
		first := true
		for rows.Next() {
			var n int64
			ev, err := scanEvent(rows, &n)
			if err != nil {
				return err
			}
			if first {
				h.Dropped, first = n-1, false
			}
			h.Events = append(h.Events, ev)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.History{}, queueErr(ctx, err)
	}
	return h, nil
}

// scanEvent reads kind, at, worker, attempt, token, error, next_due,
// signal, reason and run_time, after the columns of before.
func scanEvent(row scanner, before ...any) (contract.Event, error) {
	var (
		ev           contract.Event
		kind         string
		at, due, run int64
	)
	err := row.Scan(append(before, &kind, &at, &ev.Worker, &ev.Attempt, &ev.Token, &ev.Error, &due, &ev.Signal, &ev.Reason, &run)...)
	ev.Kind, ev.At, ev.RunTime = contract.EventKind(kind), fromNanos(at), time.Duration(run)
	if due != 0 {
		ev.NextDue = fromNanos(due)
	}
	return ev, err
}

// Find returns the queue's items with this ID, by tenant. It probes the
// key once per tenant of the queue's rotation rather than keep an index
// of every item by ID, which every enqueue and complete would write.
func (q *workQueue) Find(ctx context.Context, queue, id string) ([]contract.Item, error) {
	out := []contract.Item{}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, findIDSQL, queue, id, contract.MaxFound)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			it, _, err := scanItem(rows)
			if err != nil {
				return err
			}
			out = append(out, it)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, queueErr(ctx, err)
	}
	return out, nil
}

// finishedPlace is a place in the finished order: (finished_at, tenant,
// id).
type finishedPlace struct {
	at         int64
	tenant, id string
}

// finishedCursor is "o:" (older than the place) or "n:" (newer), then
// the place's nanoseconds, tenant and id, each quoted.
func finishedCursor(dir string, p finishedPlace) string {
	return dir + ":" + strconv.FormatInt(p.at, 10) + ":" + strconv.Quote(p.tenant) + ":" + strconv.Quote(p.id)
}

func parseFinishedCursor(c string) (string, finishedPlace, error) {
	bad := &contract.ValidationError{Field: "cursor", Problem: "is not a cursor of this queue's finished listing; pass the Next or Prev of a FinishedPage, or \"\" for the first page"}
	dir, rest, ok := strings.Cut(c, ":")
	if !ok || (dir != "o" && dir != "n") {
		return "", finishedPlace{}, bad
	}
	num, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return "", finishedPlace{}, bad
	}
	at, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return "", finishedPlace{}, bad
	}
	tenant, err := strconv.QuotedPrefix(rest)
	if err != nil || len(rest) <= len(tenant) || rest[len(tenant)] != ':' {
		return "", finishedPlace{}, bad
	}
	idq := rest[len(tenant)+1:]
	t, err1 := strconv.Unquote(tenant)
	id, err2 := strconv.Unquote(idq)
	if err1 != nil || err2 != nil {
		return "", finishedPlace{}, bad
	}
	return dir, finishedPlace{at: at, tenant: t, id: id}, nil
}

// Finished pages through the queue's finished items, newest first.
// FinishedAt is compared to the microsecond, as the listing orders.
func (q *workQueue) Finished(ctx context.Context, fq contract.FinishedQuery) (contract.FinishedPage, error) {
	limit := fq.Page.Limit
	dir, place := "o", finishedPlace{at: math.MaxInt64}
	if fq.Page.Cursor != "" {
		var err error
		if dir, place, err = parseFinishedCursor(fq.Page.Cursor); err != nil {
			return contract.FinishedPage{}, err
		}
	}
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if !fq.Since.IsZero() {
		since = nanos(fq.Since.Truncate(time.Microsecond))
	}
	if !fq.Until.IsZero() {
		until = nanos(fq.Until.Truncate(time.Microsecond))
		if fq.Until.Truncate(time.Microsecond).Before(fq.Until) {
			until = nanos(fq.Until.Truncate(time.Microsecond).Add(time.Microsecond))
		}
	}
	out := contract.FinishedPage{Items: []contract.Item{}}
	var places []finishedPlace
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		text := finishedOlderSQL
		if dir == "n" {
			text = finishedNewerSQL
		}
		rows, err := e.QueryContext(ctx, text, fq.Queue, place.at, place.tenant, place.id, fq.Tenant, string(fq.State), fq.ID, since, until, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			it, _, err := scanItem(rows)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, it)
			places = append(places, finishedPlace{at: nanos(it.FinishedAt), tenant: it.Tenant, id: it.ID})
		}
		return rows.Err()
	})
	if err != nil {
		return contract.FinishedPage{}, queueErr(ctx, err)
	}
	more := len(out.Items) > limit
	if more {
		out.Items, places = out.Items[:limit], places[:limit]
	}
	if dir == "n" {
		// Read oldest first from the place: the page is those, newest first.
		for i, j := 0, len(out.Items)-1; i < j; i, j = i+1, j-1 {
			out.Items[i], out.Items[j] = out.Items[j], out.Items[i]
			places[i], places[j] = places[j], places[i]
		}
		if len(out.Items) > 0 {
			out.Next = finishedCursor("o", places[len(places)-1])
			if more {
				out.Prev = finishedCursor("n", places[0])
			}
		} else {
			out.Next = finishedCursor("o", place)
		}
		return out, nil
	}
	if more {
		out.Next = finishedCursor("o", places[len(places)-1])
	}
	if fq.Page.Cursor != "" {
		if len(out.Items) > 0 {
			out.Prev = finishedCursor("n", places[0])
		} else {
			out.Prev = finishedCursor("n", place)
		}
	}
	return out, nil
}

// QueueEvents reads the queue's log after the cursor, oldest first.
func (q *workQueue) QueueEvents(ctx context.Context, queue, cursor string, limit int) (contract.EventPage, error) {
	after := int64(-1)
	if cursor != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(cursor, "e"), 10, 64)
		if err != nil || !strings.HasPrefix(cursor, "e") || n < 0 {
			return contract.EventPage{}, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor of this queue's events; pass the Next of an EventPage, or \"\" to read from the oldest kept"}
		}
		after = n
	}
	out := contract.EventPage{Events: []contract.Event{}}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		var first sql.NullInt64
		var last int64
		if err := e.QueryRowContext(ctx, logBoundsSQL, queue).Scan(&first, &last); err != nil {
			return err
		}
		// The log may still hold up to logTrimStep entries older than
		// its latest contract.QueueEventLog; they are not returned.
		oldest := last + 1
		if first.Valid {
			oldest = max(first.Int64, last-contract.QueueEventLog+1)
		}
		if after < 0 {
			after = oldest - 1
		} else if after+1 < oldest && after < last {
			out.Gap = true
			after = oldest - 1
		}
		next := after
		rows, err := e.QueryContext(ctx, logReadSQL, queue, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			var tenant, id string
			ev, err := scanEvent(rows, &seq, &tenant, &id)
			if err != nil {
				return err
			}
			ev.Tenant, ev.ID = tenant, id
			out.Events = append(out.Events, ev)
			next = seq
		}
		out.Next = "e" + strconv.FormatInt(next, 10)
		return rows.Err()
	})
	if err != nil {
		return contract.EventPage{}, queueErr(ctx, err)
	}
	return out, nil
}

// pruneScan is how many finished items one Prune reads at most, kept or
// not: its work is bounded whatever the queue holds.
const pruneScan = 4 * contract.PruneBatch

// Prune removes up to contract.PruneBatch finished items the queue's
// retention and their windows let go, oldest first, with their events,
// and trims the queue's log. It reads the finished index in order from
// the oldest and stops at the first item the retention keeps, so its
// work is bounded by what it removes and the windows still open.
func (q *workQueue) Prune(ctx context.Context, queue string) (int, error) {
	now := nanos(q.clock.Now())
	var n int
	err := q.db.write(ctx, func(ctx context.Context, e execer) error {
		n = 0
		r, err := readRetention(ctx, e, queue)
		if err != nil {
			return err
		}
		type victim struct {
			tenant, id string
			completed  bool
		}
		var list []victim
		if r.Keeps() {
			excess := int64(0)
			if r.Count > 0 && r.finished > int64(r.Count) {
				excess = r.finished - int64(r.Count)
			}
			cut := int64(math.MinInt64)
			if r.Age > 0 {
				cut = now - int64(r.Age)
			}
			rows, err := e.QueryContext(ctx, pruneScanSQL, queue, int64(math.MinInt64), "", "", pruneScan)
			if err != nil {
				return err
			}
			var i int64
			for rows.Next() {
				var v victim
				var state string
				var finished, uniqueUntil int64
				if err := rows.Scan(&v.tenant, &v.id, &state, &finished, &uniqueUntil); err != nil {
					rows.Close()
					return err
				}
				if i >= excess && finished > cut {
					break // every item from here on the retention keeps
				}
				i++
				if uniqueUntil > now {
					continue
				}
				v.completed = state == string(contract.StateCompleted)
				list = append(list, v)
				if len(list) == contract.PruneBatch {
					break
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		} else {
			rows, err := e.QueryContext(ctx, pruneUniqueSQL, queue, now, contract.PruneBatch)
			if err != nil {
				return err
			}
			for rows.Next() {
				var v victim
				var state string
				var finished, uniqueUntil int64
				if err := rows.Scan(&v.tenant, &v.id, &state, &finished, &uniqueUntil); err != nil {
					rows.Close()
					return err
				}
				v.completed = true
				list = append(list, v)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		for _, v := range list {
			if _, err := e.ExecContext(ctx, itemDeleteSQL, queue, v.tenant, v.id); err != nil {
				return err
			}
			if _, err := e.ExecContext(ctx, eventsDeleteSQL, queue, v.tenant, v.id); err != nil {
				return err
			}
		}
		if err := finishedAdd(ctx, e, queue, -len(list)); err != nil {
			return err
		}
		var first sql.NullInt64
		var last int64
		if err := e.QueryRowContext(ctx, logBoundsSQL, queue).Scan(&first, &last); err != nil {
			return err
		}
		if first.Valid && last-first.Int64 >= contract.QueueEventLog {
			if _, err := e.ExecContext(ctx, logTrimSQL, queue, last-contract.QueueEventLog); err != nil {
				return err
			}
		}
		n = len(list)
		return nil
	})
	if err != nil {
		return 0, queueErr(ctx, err)
	}
	return n, nil
}

// enqueueFound says what an enqueue found at an ID that was taken: a
// completed item whose window has closed is replaced (replace), any other
// is a duplicate.
func enqueueFound(ctx context.Context, e execer, k contract.ItemKey, now int64) (res contract.EnqueueResult, replace bool, err error) {
	var state string
	var until int64
	if err := e.QueryRowContext(ctx, enqueueFoundSQL, k.Queue, k.Tenant, k.ID).Scan(&state, &until); err != nil {
		return res, false, fmt.Errorf("sqlitestore: the item an enqueue found is gone: %w", err)
	}
	if contract.ItemState(state) == contract.StateCompleted && until <= now {
		return res, true, nil
	}
	res = contract.EnqueueResult{Duplicate: true, State: contract.ItemState(state)}
	if res.State == contract.StateCompleted {
		res.UniqueUntil = fromNanos(until)
	}
	return res, false, nil
}
