package memstore

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// History: a queue's Retention says what it keeps of finished items and
// whether transitions are recorded. Every hook on the hot paths is guarded
// by q.keeping (or the item's own UniqueFor), so a queue without retention
// pays one branch for it.

var (
	_ contract.HistoryKeeper = (*Store)(nil)
	_ contract.HistoryKeeper = (*store)(nil)
)

// itemHistory is what is recorded of one item's life.
type itemHistory struct {
	events     []contract.Event // the newest Retention.Events, oldest first
	dropped    int64
	heartbeats int64
}

// finKey orders finished items by when they finished (to the
// microsecond), then tenant, then ID.
type finKey struct {
	at     int64 // FinishedAt in Unix microseconds
	tenant string
	id     string
}

func cmpFin(a, b finKey) int {
	if a.at != b.at {
		return cmpInt64(a.at, b.at)
	}
	if c := strings.Compare(a.tenant, b.tenant); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

func (e *entry) finKey() finKey {
	return finKey{at: e.item.FinishedAt.UnixMicro(), tenant: e.item.Tenant, id: e.item.ID}
}

// finishedAt is now to the microsecond, as every backing keeps it.
func finishedAt(now time.Time) time.Time { return now.Truncate(time.Microsecond) }

// SetRetention sets what the queue keeps from now on.
func (s *store) SetRetention(ctx context.Context, name string, r contract.Retention) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queue(name)
	q.ret = r
	q.keeping = r != (contract.Retention{})
	return nil
}

// Retention returns what the queue keeps.
func (s *store) Retention(ctx context.Context, name string) (contract.Retention, error) {
	if err := s.lock(ctx); err != nil {
		return contract.Retention{}, err
	}
	defer s.mu.Unlock()
	if q := s.queues[name]; q != nil {
		return q.ret, nil
	}
	return contract.Retention{}, nil
}

// EnqueueReport enqueues as Enqueue does and reports the duplicates.
func (s *store) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	out := make([]contract.EnqueueResult, len(items))
	return out, s.enqueue(ctx, items, out)
}

// record appends ev, which happened to e at now, to e's events and the
// queue's log. Callers check q.ret.Events > 0 first.
func (s *store) record(q *queue, e *entry, ev contract.Event, now time.Time) {
	ev.At = now
	if e.hist == nil {
		// enqueued, claimed and completed: most lives need no more.
		e.hist = &itemHistory{events: make([]contract.Event, 0, min(q.ret.Events, 4))}
	}
	h := e.hist
	if n := q.ret.Events; len(h.events) >= n {
		drop := len(h.events) - n + 1
		h.events = append(h.events[:0], h.events[drop:]...)
		h.dropped += int64(drop)
	}
	h.events = append(h.events, ev)
	ev.Tenant, ev.ID = e.item.Tenant, e.item.ID
	q.logSeq++
	if len(q.log) < contract.QueueEventLog {
		q.log = append(q.log, ev)
		return
	}
	q.log[(q.logSeq-1)%contract.QueueEventLog] = ev
}

func (e *entry) history() *itemHistory {
	if e.hist == nil {
		e.hist = &itemHistory{}
	}
	return e.hist
}

// recording reports whether q records events.
func (q *queue) recording() bool { return q.ret.Events > 0 }

// finish keeps a completed item for the record, or drops it when neither
// the queue's retention nor its own uniqueness window keeps it. It is the
// slow path of Complete, taken only when q.keeping or the item has a
// UniqueFor.
func (s *store) finish(q *queue, tq *tenantQueue, e *entry, now time.Time) {
	if q.recording() {
		ev := contract.Event{Kind: contract.EventCompleted, Worker: e.worker, Attempt: e.item.Attempts + 1}
		if !e.claimedAt.IsZero() {
			ev.RunTime = now.Sub(e.claimedAt)
		}
		s.record(q, e, ev, now)
	}
	if !q.ret.Keeps() && e.item.UniqueFor <= 0 {
		s.drop(q, tq, e)
		return
	}
	s.endLease(q, tq, e)
	e.claimedAt = time.Time{}
	e.item.State = contract.StateCompleted
	e.item.FinishedAt = finishedAt(now)
	q.finished.Put(e.finKey(), e)
}

// windowOpen reports whether e's uniqueness window is still open at now.
func (e *entry) windowOpen(now time.Time) bool {
	return e.item.UniqueFor > 0 && now.Before(e.item.FinishedAt.Add(e.item.UniqueFor))
}

// The index by ID across tenants serves Find alone, an operator's call,
// while keeping it up costs every enqueue and every settle an update of a
// map of every item of the queue. So a queue builds it at its first Find
// and keeps it from then on: a queue never searched this way pays nothing
// for it, and one that is pays once for the build.

// indexID adds e to its queue's index by ID, when the queue keeps one, at
// the head of its ID's chain.
func (q *queue) indexID(e *entry) {
	if q.ids == nil {
		return
	}
	next := q.ids[e.item.ID]
	e.nextID, e.prevID = next, nil
	if next != nil {
		next.prevID = e
	}
	q.ids[e.item.ID] = e
}

// unindexID takes e out of its queue's index by ID. The chain is linked
// both ways, so this costs the same however many tenants share the ID.
func (q *queue) unindexID(e *entry) {
	if q.ids == nil {
		return
	}
	switch {
	case e.prevID != nil:
		e.prevID.nextID = e.nextID
	case e.nextID != nil:
		q.ids[e.item.ID] = e.nextID
	default:
		delete(q.ids, e.item.ID)
	}
	if e.nextID != nil {
		e.nextID.prevID = e.prevID
	}
	e.nextID, e.prevID = nil, nil
}

// History returns the item and its recorded events.
func (s *store) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	if err := s.lock(ctx); err != nil {
		return contract.History{}, err
	}
	defer s.mu.Unlock()
	e := s.item(key)
	if e == nil {
		return contract.History{}, contract.ErrNotFound
	}
	out := contract.History{Item: copyItem(e.item), Events: []contract.Event{}}
	if h := e.hist; h != nil {
		out.Events = append(out.Events, h.events...)
		out.Dropped, out.Heartbeats = h.dropped, h.heartbeats
	}
	return out, nil
}

// Find returns the queue's items with this ID, by tenant.
func (s *store) Find(ctx context.Context, name, id string) ([]contract.Item, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []contract.Item{}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	if q.ids == nil {
		q.ids = make(map[string]*entry, q.items)
		for _, tq := range q.tenants {
			for _, e := range tq.items {
				q.indexID(e)
			}
		}
	}
	for e := q.ids[id]; e != nil; e = e.nextID {
		out = append(out, copyItem(e.item))
	}
	slices.SortFunc(out, func(a, b contract.Item) int { return strings.Compare(a.Tenant, b.Tenant) })
	if len(out) > contract.MaxFound {
		out = out[:contract.MaxFound]
	}
	return out, nil
}

// Finished cursors: "o" (older than the key) or "n" (newer than it),
// then the key, NUL-separated (names never hold a NUL), in base64.

func finCursor(dir string, k finKey) string {
	raw := dir + "\x00" + strconv.FormatInt(k.at, 10) + "\x00" + k.tenant + "\x00" + k.id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseFinCursor(c string) (older bool, k *finKey, err error) {
	if c == "" {
		return true, nil, nil
	}
	bad := &contract.ValidationError{Field: "cursor", Problem: "is not a cursor this listing returned; pass \"\" or the Next or Prev of a page"}
	raw, derr := base64.RawURLEncoding.DecodeString(c)
	if derr != nil {
		return false, nil, bad
	}
	parts := strings.Split(string(raw), "\x00")
	if len(parts) != 4 || (parts[0] != "o" && parts[0] != "n") {
		return false, nil, bad
	}
	at, perr := strconv.ParseInt(parts[1], 10, 64)
	if perr != nil {
		return false, nil, bad
	}
	return parts[0] == "o", &finKey{at: at, tenant: parts[2], id: parts[3]}, nil
}

// finishedMatches reports whether the finished item e is selected by fq.
func finishedMatches(fq contract.FinishedQuery, e *entry) bool {
	it := e.item
	switch {
	case fq.Tenant != "" && it.Tenant != fq.Tenant:
		return false
	case fq.State != "" && it.State != fq.State:
		return false
	case fq.ID != "" && it.ID != fq.ID:
		return false
	case !fq.Since.IsZero() && it.FinishedAt.Before(fq.Since):
		return false
	case !fq.Until.IsZero() && !it.FinishedAt.Before(fq.Until):
		return false
	}
	return true
}

// Finished pages through the queue's finished items, newest first.
func (s *store) Finished(ctx context.Context, fq contract.FinishedQuery) (contract.FinishedPage, error) {
	older, at, err := parseFinCursor(fq.Page.Cursor)
	if err != nil {
		return contract.FinishedPage{}, err
	}
	if err := s.lock(ctx); err != nil {
		return contract.FinishedPage{}, err
	}
	defer s.mu.Unlock()
	out := contract.FinishedPage{Items: []contract.Item{}}
	q := s.queues[fq.Queue]
	if q == nil {
		return out, nil
	}
	limit := fq.Page.Limit
	var got []*entry
	more := false
	if older {
		var from *finKey
		if at != nil {
			// Descend includes its bound: start just below the key.
			b := *at
			from = &b
		}
		q.finished.Descend(from, func(k finKey, e *entry) bool {
			if at != nil && cmpFin(k, *at) >= 0 {
				return true
			}
			if !finishedMatches(fq, e) {
				return true
			}
			if len(got) == limit {
				more = true
				return false
			}
			got = append(got, e)
			return true
		})
		for _, e := range got {
			out.Items = append(out.Items, copyItem(e.item))
		}
		if more {
			out.Next = finCursor("o", got[len(got)-1].finKey())
		}
		if at != nil && len(got) > 0 {
			out.Prev = finCursor("n", got[0].finKey())
		}
		return out, nil
	}
	q.finished.Ascend(at, func(_ finKey, e *entry) bool {
		if !finishedMatches(fq, e) {
			return true
		}
		if len(got) == limit {
			more = true
			return false
		}
		got = append(got, e)
		return true
	})
	for i := len(got) - 1; i >= 0; i-- {
		out.Items = append(out.Items, copyItem(got[i].item))
	}
	if len(got) > 0 {
		out.Next = finCursor("o", got[0].finKey())
		if more {
			out.Prev = finCursor("n", got[len(got)-1].finKey())
		}
	}
	return out, nil
}

// QueueEvents returns the queue's events logged after the cursor, whose
// form is the seq of the last event read.
func (s *store) QueueEvents(ctx context.Context, name, cursor string, limit int) (contract.EventPage, error) {
	var after int64 = -1
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 {
			return contract.EventPage{}, badEventCursor()
		}
		after = n
	}
	if err := s.lock(ctx); err != nil {
		return contract.EventPage{}, err
	}
	defer s.mu.Unlock()
	var logSeq int64
	var log []contract.Event
	if q := s.queues[name]; q != nil {
		logSeq, log = q.logSeq, q.log
	}
	if after > logSeq {
		return contract.EventPage{}, badEventCursor()
	}
	oldest := logSeq - int64(len(log)) + 1 // seq of the oldest kept
	out := contract.EventPage{Events: []contract.Event{}}
	if after < 0 {
		after = oldest - 1
	} else if after+1 < oldest {
		out.Gap = true
		after = oldest - 1
	}
	for seq := after + 1; seq <= logSeq && len(out.Events) < limit; seq++ {
		out.Events = append(out.Events, log[(seq-1)%int64(contract.QueueEventLog)])
		after = seq
	}
	out.Next = strconv.FormatInt(after, 10)
	return out, nil
}

func badEventCursor() error {
	return &contract.ValidationError{Field: "cursor", Problem: "is not a cursor QueueEvents returned; pass \"\" or the Next of the previous page"}
}

// pruneVisits bounds the finished items one Prune looks at, removable or
// not (those held by an open uniqueness window are passed over).
const pruneVisits = 4 * contract.PruneBatch

// Prune removes up to PruneBatch finished items past the retention and
// their uniqueness windows, oldest first.
func (s *store) Prune(ctx context.Context, name string) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	q := s.queues[name]
	if q == nil {
		return 0, nil
	}
	now := s.clock.Now()
	r := q.ret
	total := q.finished.Len()
	var gone []*entry
	visits := 0
	q.finished.Ascend(nil, func(_ finKey, e *entry) bool {
		idx := visits
		visits++
		if len(gone) == contract.PruneBatch || visits > pruneVisits {
			return false
		}
		if r.Keeps() {
			byAge := r.Expired(e.item.FinishedAt, now)
			byCount := r.Count > 0 && idx < total-r.Count
			if !byAge && !byCount {
				return false // every later item is newer still
			}
			if !e.windowOpen(now) {
				gone = append(gone, e)
			}
			return true
		}
		if e.item.State == contract.StateCompleted && !e.windowOpen(now) {
			gone = append(gone, e)
		}
		return true
	})
	for _, e := range gone {
		s.drop(q, e.tq, e)
	}
	return len(gone), nil
}
