package memstore

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Queues lists the names of the queues that hold any item, sorted.
func (s *store) Queues(ctx context.Context) ([]string, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	names := []string{}
	for name, q := range s.queues {
		if q.items > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Tenants returns the counts of every tenant that holds items in the queue
// or has been served by it, by tenant name.
func (s *store) Tenants(ctx context.Context, name string) ([]contract.TenantStats, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []contract.TenantStats{}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	now := s.clock.Now()
	dueBound := readyKey{due: now, seq: math.MaxInt64}
	for _, tq := range q.tenants {
		queued := tq.queued()
		if queued == 0 && tq.leased == 0 && tq.dead == 0 && tq.served == 0 && tq.waiting == 0 && tq.cancelled == 0 && !tq.paused {
			continue
		}
		ready := tq.ready.Len() + tq.later.CountBelow(dueBound)
		st := contract.TenantStats{
			Tenant:    tq.name,
			Ready:     int64(ready),
			Later:     int64(queued - ready),
			Leased:    int64(tq.leased),
			Dead:      int64(tq.dead),
			Waiting:   int64(tq.waiting),
			Cancelled: int64(tq.cancelled),
			Paused:    tq.paused,
			Served:    tq.served,
		}
		// Due items are ordered by priority and due time, not by enqueue
		// time, so the oldest needs a look at each of them.
		oldest := func(k readyKey, e *entry) bool {
			if k.due.After(now) {
				return false
			}
			if st.OldestReady.IsZero() || e.item.EnqueuedAt.Before(st.OldestReady) {
				st.OldestReady = e.item.EnqueuedAt
			}
			return true
		}
		tq.ready.Ascend(func(k readyKey, e *entry) bool { oldest(k, e); return true })
		tq.later.Ascend(nil, oldest)
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b contract.TenantStats) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// Rotation returns the queue's tenants with queued work, next to be served
// first, and its last n turns.
func (s *store) Rotation(ctx context.Context, name string, n int) (contract.Rotation, error) {
	if err := s.lock(ctx); err != nil {
		return contract.Rotation{}, err
	}
	defer s.mu.Unlock()
	out := contract.Rotation{Order: []string{}, Recent: []contract.Turn{}}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	// Tenants with a due item come first, in turn order, so Order[0] is
	// served next; those whose items are all delayed follow in the order
	// their items fall due.
	now := s.clock.Now()
	var due, later []*tenantQueue
	q.due.Ascend(nil, func(_ int64, tq *tenantQueue) bool { due = append(due, tq); return true })
	q.waiting.Ascend(nil, func(k waitKey, tq *tenantQueue) bool {
		if k.at.After(now) {
			later = append(later, tq)
		} else {
			due = append(due, tq)
		}
		return true
	})
	slices.SortFunc(due, func(a, b *tenantQueue) int { return cmpInt64(a.stamp, b.stamp) })
	for _, tq := range append(due, later...) {
		out.Order = append(out.Order, tq.name)
	}
	out.Recent = append(out.Recent, q.lastTurns(n)...)
	return out, nil
}

// Leases pages through the queue's live leases, soonest expiry first.
func (s *store) Leases(ctx context.Context, name string, page contract.PageRequest) (contract.LeasePage, error) {
	limit := page.Limit
	after, err := parseLeaseCursor(page.Cursor)
	if err != nil {
		return contract.LeasePage{}, err
	}
	if err := s.lock(ctx); err != nil {
		return contract.LeasePage{}, err
	}
	defer s.mu.Unlock()
	out := contract.LeasePage{Leases: []contract.Lease{}}
	q := s.queues[name]
	if q == nil {
		return out, nil
	}
	q.leases.Ascend(after, func(k leaseKey, e *entry) bool {
		if len(out.Leases) == limit {
			last := out.Leases[limit-1]
			out.Next = leaseCursor(leaseKey{last.ExpiresAt, last.Token})
			return false
		}
		out.Leases = append(out.Leases, e.lease())
		return true
	})
	return out, nil
}

func leaseCursor(k leaseKey) string {
	return strconv.FormatInt(k.expires.UnixNano(), 10) + "." + strconv.FormatInt(k.token, 10)
}

func parseLeaseCursor(c string) (*leaseKey, error) {
	if c == "" {
		return nil, nil
	}
	ns, tok, ok := strings.Cut(c, ".")
	if !ok {
		return nil, badCursor()
	}
	n, err1 := strconv.ParseInt(ns, 10, 64)
	t, err2 := strconv.ParseInt(tok, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, badCursor()
	}
	return &leaseKey{expires: time.Unix(0, n), token: t}, nil
}

// Item returns one item and, when it is leased, its lease.
func (s *store) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	if err := s.lock(ctx); err != nil {
		return contract.ItemInfo{}, err
	}
	defer s.mu.Unlock()
	e := s.item(key)
	if e == nil {
		return contract.ItemInfo{}, contract.ErrNotFound
	}
	info := contract.ItemInfo{Item: copyItem(e.item)}
	if e.item.State == contract.StateLeased {
		l := e.lease()
		info.Lease = &l
	}
	return info, nil
}

// Health reports that the store is in process memory (not durable) and
// how much it holds.
func (s *store) Health(ctx context.Context) (contract.Health, error) {
	if err := s.lock(ctx); err != nil {
		return contract.Health{}, err
	}
	defer s.mu.Unlock()
	var queued, leased, dead int
	for _, q := range s.queues {
		for _, tq := range q.tenants {
			queued += tq.queued()
			leased += tq.leased
			dead += tq.dead
		}
	}
	return contract.Health{
		Backing: "memory",
		Checks: []contract.HealthCheck{{
			Name:   "durability",
			Value:  "none: held in process memory, lost when the process exits",
			Status: contract.HealthOK,
			Fix:    "fine for tests, development and demos; use redisstore or pgstore where runs must outlive the process",
		}},
		Details: map[string]string{
			"runs":            strconv.Itoa(len(s.runs)),
			"queues":          strconv.Itoa(len(s.queues)),
			"items queued":    strconv.Itoa(queued),
			"items leased":    strconv.Itoa(leased),
			"items dead":      strconv.Itoa(dead),
			"max value bytes": strconv.Itoa(s.maxBytes),
			"max attempts":    strconv.Itoa(s.policy.Attempts()),
		},
	}, nil
}

// Stats returns the store's wake counters; the pool and listener fields
// have no meaning in memory and stay zero.
func (s *store) Stats() contract.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return contract.Stats{Wakes: s.wakes, LastWake: s.lastWake}
}
