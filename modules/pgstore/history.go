package pgstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
)

var (
	_ contract.HistoryKeeper = (*PostgresWorkQueue)(nil)
	_ contract.HistoryKeeper = (*workQueue)(nil)
)

// SetRetention writes the queue's row of {work}_retention. Every
// statement that records a transition reads that row itself, so the
// change holds at once for every process on the database.
func (q *workQueue) SetRetention(ctx context.Context, queue string, r contract.Retention) error {
	if r.Events > 0 {
		// Claims record events from now on: the lean claim cannot.
		q.events.set(queue, true)
	}
	// The queue has a retention row from now on (even a zero Retention
	// is written as one): its Completes run the full statement.
	q.keeps.set(queue, true)
	return queueErr(q.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, q.q.retentionSet, queue, r.Age.Microseconds(), r.Count, r.Events)
		return err
	}))
}

// Retention reads the queue's row of {work}_retention.
func (q *workQueue) Retention(ctx context.Context, queue string) (contract.Retention, error) {
	var r contract.Retention
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		var age int64
		err := e.QueryRow(ctx, q.q.retentionGet, queue).Scan(&age, &r.Count, &r.Events)
		if errors.Is(err, pgx.ErrNoRows) {
			r = contract.Retention{}
			return nil
		}
		r.Age = time.Duration(age) * time.Microsecond
		return err
	})
	return r, queueErr(err)
}

// EnqueueReport enqueues as Enqueue does, in the same statement, and
// reads the state each duplicate was found in from the statement's
// snapshot.
func (q *workQueue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	return q.enqueue(ctx, items, true)
}

// History reads the item and the events of its current life.
func (q *workQueue) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	var h contract.History
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		h = contract.History{}
		rows, err := e.Query(ctx, q.q.historyItem, key.Queue, key.Tenant, key.ID)
		if err != nil {
			return err
		}
		var count, keep int
		found := false
		err = readRows(rows, func(rows pgx.Rows) error {
			l, err := scanLease(rows, &count, &h.Heartbeats, &keep)
			h.Item, found = l.Item, true
			return err
		})
		if err != nil {
			return err
		}
		if !found {
			return contract.ErrNotFound
		}
		from := 1
		if keep > 0 {
			from = max(count-keep+1, 1)
		}
		rows, err = e.Query(ctx, q.q.historyEvents, key.Queue, key.Tenant, key.ID, from)
		if err != nil {
			return err
		}
		h.Events = []contract.Event{}
		err = readRows(rows, func(rows pgx.Rows) error {
			ev, err := scanEvent(rows)
			h.Events = append(h.Events, ev)
			return err
		})
		h.Dropped = int64(max(count-len(h.Events), 0))
		return err
	})
	if err != nil {
		return contract.History{}, queueErr(err)
	}
	return h, nil
}

// scanEvent reads kind, at, worker, attempt, token, error, next_due,
// signal, reason, run_time_us, then any extra destinations.
func scanEvent(rows pgx.Rows, before ...any) (contract.Event, error) {
	var (
		ev      contract.Event
		kind    string
		nextDue *time.Time
		runUS   int64
	)
	dest := append(before, &kind, &ev.At, &ev.Worker, &ev.Attempt, &ev.Token, &ev.Error, &nextDue, &ev.Signal, &ev.Reason, &runUS)
	if err := rows.Scan(dest...); err != nil {
		return ev, err
	}
	ev.Kind, ev.At = contract.EventKind(kind), utc(ev.At)
	if nextDue != nil {
		ev.NextDue = utc(*nextDue)
	}
	ev.RunTime = time.Duration(runUS) * time.Microsecond
	return ev, nil
}

// finishedKey is the place of a finished item in the listing's order.
type finishedKey struct {
	at         time.Time
	tenant, id string
}

func keyOf(it contract.Item) finishedKey { return finishedKey{it.FinishedAt, it.Tenant, it.ID} }

// A Finished cursor is "o" (older items) or "n" (newer ones), the
// key's finished_at in Unix microseconds, its tenant and its ID, joined
// by "/" (names never hold one).
func (k finishedKey) cursor(dir string) string {
	return dir + "/" + strconv.FormatInt(k.at.UnixMicro(), 10) + "/" + k.tenant + "/" + k.id
}

func parseFinishedCursor(c string) (dir string, k finishedKey, err error) {
	parts := strings.Split(c, "/")
	bad := &contract.ValidationError{Field: "cursor", Problem: "is not a cursor the finished listing returned; pass \"\" or a page's Next or Prev"}
	if len(parts) != 4 || (parts[0] != "o" && parts[0] != "n") {
		return "", k, bad
	}
	us, perr := strconv.ParseInt(parts[1], 10, 64)
	if perr != nil {
		return "", k, bad
	}
	return parts[0], finishedKey{time.UnixMicro(us).UTC(), parts[2], parts[3]}, nil
}

// Finished pages through {work}_finished with keyset cursors.
func (q *workQueue) Finished(ctx context.Context, fq contract.FinishedQuery) (contract.FinishedPage, error) {
	dir, key := "o", finishedKey{at: time.Unix(1<<40, 0).UTC()}
	if fq.Page.Cursor != "" {
		var err error
		if dir, key, err = parseFinishedCursor(fq.Page.Cursor); err != nil {
			return contract.FinishedPage{}, err
		}
	}
	limit := fq.Page.Limit
	var since, until *time.Time
	if !fq.Since.IsZero() {
		since = &fq.Since
	}
	if !fq.Until.IsZero() {
		until = &fq.Until
	}
	sql := q.q.finishedOlder
	if dir == "n" {
		sql = q.q.finishedNewer
	}
	var items []contract.Item
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		items = items[:0]
		rows, err := e.Query(ctx, sql, fq.Queue, fq.Tenant, string(fq.State), fq.ID, since, until, key.at, key.tenant, key.id, limit+1)
		if err != nil {
			return err
		}
		return readRows(rows, func(rows pgx.Rows) error {
			l, err := scanLease(rows)
			items = append(items, l.Item)
			return err
		})
	})
	if err != nil {
		return contract.FinishedPage{}, queueErr(err)
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	out := contract.FinishedPage{Items: items}
	if out.Items == nil {
		out.Items = []contract.Item{}
	}
	if dir == "n" {
		slices.Reverse(out.Items)
		if len(out.Items) > 0 {
			out.Next = keyOf(out.Items[len(out.Items)-1]).cursor("o")
			if more {
				out.Prev = keyOf(out.Items[0]).cursor("n")
			}
		} else {
			out.Next = key.cursor("o")
		}
		return out, nil
	}
	if len(out.Items) > 0 {
		if more {
			out.Next = keyOf(out.Items[len(out.Items)-1]).cursor("o")
		}
		if fq.Page.Cursor != "" {
			out.Prev = keyOf(out.Items[0]).cursor("n")
		}
	} else if fq.Page.Cursor != "" {
		out.Prev = key.cursor("n")
	}
	return out, nil
}

// Find walks the queue's tenants in the primary key and probes each for
// the ID (queries/find.sql).
func (q *workQueue) Find(ctx context.Context, queue, id string) ([]contract.Item, error) {
	out := []contract.Item{}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out = out[:0]
		rows, err := e.Query(ctx, q.q.find, queue, id, contract.MaxFound)
		if err != nil {
			return err
		}
		return readRows(rows, func(rows pgx.Rows) error {
			l, err := scanLease(rows)
			out = append(out, l.Item)
			return err
		})
	})
	if err != nil {
		return nil, queueErr(err)
	}
	return out, nil
}

// QueueEvents reads the queue's log after the cursor, a seq.
func (q *workQueue) QueueEvents(ctx context.Context, queue, cursor string, limit int) (contract.EventPage, error) {
	var after int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 {
			return contract.EventPage{}, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor QueueEvents returned; pass \"\" or a page's Next"}
		}
		after = n
	}
	var out contract.EventPage
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out = contract.EventPage{Events: []contract.Event{}}
		rows, err := e.Query(ctx, q.q.queueEvents, queue, after, limit, contract.QueueEventLog)
		if err != nil {
			return err
		}
		last := after
		err = readRows(rows, func(rows pgx.Rows) error {
			var (
				seq        int64
				tenant, id *string
				kind       *string
			)
			// The closing row has no kind: its seq is the log's latest
			// and its run time column says whether there was a gap.
			var (
				at                              *time.Time
				worker, errText, signal, reason *string
				attempt                         *int
				token, runUS                    *int64
				nextDue                         *time.Time
			)
			if err := rows.Scan(&seq, &tenant, &id, &kind, &at, &worker, &attempt, &token, &errText, &nextDue, &signal, &reason, &runUS); err != nil {
				return err
			}
			if kind == nil {
				out.Gap = cursor != "" && runUS != nil && *runUS == 1
				if len(out.Events) == 0 && cursor == "" {
					last = seq
				}
				return nil
			}
			ev := contract.Event{Kind: contract.EventKind(*kind), At: utc(*at), Tenant: *tenant, ID: *id, Worker: *worker, Attempt: *attempt,
				Token: *token, Error: *errText, Signal: *signal, Reason: *reason, RunTime: time.Duration(*runUS) * time.Microsecond}
			if nextDue != nil {
				ev.NextDue = utc(*nextDue)
			}
			out.Events = append(out.Events, ev)
			last = seq
			return nil
		})
		out.Next = strconv.FormatInt(last, 10)
		return err
	})
	if err != nil {
		return contract.EventPage{}, queueErr(err)
	}
	return out, nil
}

// Prune removes up to PruneBatch finished items the queue lets go, and
// trims its log (queries/prune.sql).
func (q *workQueue) Prune(ctx context.Context, queue string) (int, error) {
	var n int
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		return e.QueryRow(ctx, q.q.prune, queue, q.clock.Now(), contract.PruneBatch, contract.QueueEventLog).Scan(&n)
	})
	return n, queueErr(err)
}
