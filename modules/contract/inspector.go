package contract

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TenantStats are one tenant's numbers in one queue.
type TenantStats struct {
	Tenant string `json:"tenant"`
	Ready  int64  `json:"ready"`  // queued and due now
	Later  int64  `json:"later"`  // queued with NotBefore in the future
	Leased int64  `json:"leased"` // held by workers
	Dead   int64  `json:"dead"`
	// Waiting counts items waiting for a signal, Cancelled the cancelled
	// items kept for the record. (The JSON name leaves "waiting" to the
	// faces that already use it for a starved tenant.)
	Waiting   int64 `json:"waiting_items"`
	Cancelled int64 `json:"cancelled"`
	// Paused: claims pass the tenant over (its own pause; a paused queue
	// is reported by LifecycleController.Paused).
	Paused bool  `json:"paused,omitempty"`
	Served int64 `json:"served"` // turns given to the tenant by claims, since the queue began (or since the backing started counting)
	// OldestReady is the EnqueuedAt of the oldest due item; zero if none.
	// Its age is the tenant's queue latency.
	OldestReady time.Time `json:"oldest_ready,omitzero"`
}

// Turn is one item handed out by a claim.
type Turn struct {
	Tenant string    `json:"tenant"`
	ID     string    `json:"id"`
	Worker string    `json:"worker"`
	At     time.Time `json:"at"`
}

// Rotation is a queue's turn order: Order lists the tenants with queued
// work, next to be served first — those with an item due now in the order
// claims will serve them, then those whose items are all delayed, in the
// order their first items fall due; Recent lists the last turns given,
// most recent last.
type Rotation struct {
	Order  []string `json:"order"`
	Recent []Turn   `json:"recent"`
}

// Health levels, from good to bad.
const (
	HealthOK   = "ok"
	HealthWarn = "warn"
	HealthFail = "fail"
)

// HealthCheck is one observation about the backing, with the fix when it
// is not ok.
type HealthCheck struct {
	Name   string `json:"name"`   // e.g. "maxmemory-policy", "adk_work dead ratio"
	Value  string `json:"value"`  // as read, e.g. "noeviction", "0.8%"
	Status string `json:"status"` // HealthOK, HealthWarn or HealthFail
	Fix    string `json:"fix,omitempty"`
}

// Health is a backing's self-report. It never contains a secret.
type Health struct {
	Backing string        `json:"backing"` // "memory", "redis" or "postgresql"
	Checks  []HealthCheck `json:"checks"`
	// Details are other facts worth showing (server version, memory used,
	// listener reconnects...), as display strings.
	Details map[string]string `json:"details,omitempty"`
}

// Status returns the worst status among the checks (HealthOK when none).
func (h Health) Status() string {
	worst := HealthOK
	for _, c := range h.Checks {
		switch {
		case c.Status == HealthFail:
			return HealthFail
		case c.Status == HealthWarn:
			worst = HealthWarn
		}
	}
	return worst
}

// ItemInfo is what the Inspector knows of one item.
type ItemInfo struct {
	Item  Item   `json:"item"`
	Lease *Lease `json:"lease,omitempty"` // when leased
}

// Inspector gives read-only snapshots for the dashboard and for metrics.
// Every backing implements it. Nothing here changes the queue.
type Inspector interface {
	// Queues lists the queue names that hold any item.
	Queues(ctx context.Context) ([]string, error)
	// Tenants returns per-tenant counts for the queue, by tenant name.
	Tenants(ctx context.Context, queue string) ([]TenantStats, error)
	// Rotation returns the turn order and the last n turns (n ≤ 1000).
	Rotation(ctx context.Context, queue string, n int) (Rotation, error)
	// Leases pages through the queue's live leases, soonest expiry first.
	Leases(ctx context.Context, queue string, page PageRequest) (LeasePage, error)
	// Item finds one item by key, or returns ErrNotFound.
	Item(ctx context.Context, key ItemKey) (ItemInfo, error)
	// Health reports the backing's configuration and condition.
	Health(ctx context.Context) (Health, error)
	// DeadLetterSummary counts the dead letters f matches and lists the
	// largest of them grouped by error, at most groups (0 to
	// MaxErrorGroups; 0 asks for the count alone, which a backing may
	// answer without reading a letter).
	DeadLetterSummary(ctx context.Context, f DeadLetterFilter, groups int) (DeadLetterSummary, error)
}

// Bounds of DeadLetterSummary.
const (
	// ErrorGroupRunes is how much of a LastError names its group: long
	// messages (a stack trace, a quoted payload) that start alike are one
	// group.
	ErrorGroupRunes = 120
	// MaxErrorGroups bounds the groups one summary lists.
	MaxErrorGroups = 1000
)

// DeadLetterSummary is what a dead-letter filter matches, counted.
type DeadLetterSummary struct {
	// Total is the number of letters the filter matches.
	Total int64 `json:"total"`
	// Distinct is the number of error groups among them, listed or not.
	Distinct int64 `json:"distinct_errors"`
	// Groups are the largest error groups, most letters first, ties in
	// byte order of the error.
	Groups []DeadLetterGroup `json:"groups"`
}

// DeadLetterGroup is the letters whose LastError starts alike (see
// ErrorGroup).
type DeadLetterGroup struct {
	Error string `json:"error"`
	Count int64  `json:"count"`
	// LastDeadAt is when the group's most recent letter died.
	LastDeadAt time.Time `json:"last_dead_at"`
}

// ValidateSummary checks a DeadLetterSummary request.
func ValidateSummary(f DeadLetterFilter, groups int) error {
	if groups < 0 || groups > MaxErrorGroups {
		return &ValidationError{Field: "groups", Problem: fmt.Sprintf("is %d; ask for 0 (the count alone) to %d error groups", groups, MaxErrorGroups)}
	}
	return ValidateFilter(f)
}

// ErrorTally counts dead letters and groups them the way
// DeadLetterSummary lists them, for a backing that reads the letters
// itself. Its zero value counts without grouping.
type ErrorTally struct {
	groups  int
	total   int64
	byError map[string]*DeadLetterGroup
}

// NewErrorTally tallies for a summary of at most groups groups (0: the
// count alone, and no group is kept).
func NewErrorTally(groups int) *ErrorTally {
	t := &ErrorTally{groups: groups}
	if groups > 0 {
		t.byError = map[string]*DeadLetterGroup{}
	}
	return t
}

// Add counts one matching letter.
func (t *ErrorTally) Add(lastError string, deadAt time.Time) {
	t.total++
	if t.byError == nil {
		return
	}
	key := ErrorGroup(lastError)
	g := t.byError[key]
	if g == nil {
		g = &DeadLetterGroup{Error: key}
		t.byError[key] = g
	}
	g.Count++
	if deadAt.After(g.LastDeadAt) {
		g.LastDeadAt = deadAt
	}
}

// Summary returns the count and the largest groups, most letters first,
// ties in byte order of the error.
func (t *ErrorTally) Summary() DeadLetterSummary {
	out := DeadLetterSummary{Total: t.total, Groups: []DeadLetterGroup{}}
	if t.byError == nil {
		return out
	}
	out.Distinct = int64(len(t.byError))
	for _, g := range t.byError {
		out.Groups = append(out.Groups, *g)
	}
	slices.SortFunc(out.Groups, func(a, b DeadLetterGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Error, b.Error))
	})
	out.Groups = out.Groups[:min(t.groups, len(out.Groups))]
	return out
}

// LeasePage is one page of leases; Next is "" on the last page.
type LeasePage struct {
	Leases []Lease
	Next   string
}

// Stats are plain counters a backing keeps about itself (pool waits,
// listener reconnects), read by adkotel's metrics without the backing
// depending on OpenTelemetry. Fields a backing has no notion of stay zero.
type Stats struct {
	PoolAcquires       int64     `json:"pool_acquires"`
	PoolWaits          int64     `json:"pool_waits"` // acquires that had to wait for a connection
	PoolExhausted      int64     `json:"pool_exhausted"`
	ListenerReconnects int64     `json:"listener_reconnects"`
	Wakes              int64     `json:"wakes"`
	LastWake           time.Time `json:"last_wake,omitzero"`
}

// StatsSource is implemented by backings that keep Stats.
type StatsSource interface {
	Stats() Stats
}

// ShardStats describes one shard of a queue spread over several (see
// [ShardReporter]).
type ShardStats struct {
	Shard   int    // 0 to the number of shards less one
	Node    string // the server that holds it (host:port), "" when unknown
	Slot    int    // its Redis Cluster hash slot, -1 when it has none
	Tenants int    // tenants with queued or leased items in it
	Queued  int    // items queued in it (due or delayed)
	Leased  int    // live leases in it
	// ClaimRate is items claimed per second from the shard over the last
	// minute (of its recent turns), 0 when none.
	ClaimRate float64
}

// ShardReporter is implemented by queues that can spread each queue over
// several shards (redisstore, whatever its Settings.Shards): what the
// dashboard shows per shard. A queue kept in one piece reports one shard.
type ShardReporter interface {
	// Shards returns queue's shards in shard order.
	Shards(ctx context.Context, queue string) ([]ShardStats, error)
}

// AsShardReporter returns q's ShardReporter, looking through wrappers
// that Unwrap to the queue they wrap, when one has it.
func AsShardReporter(q WorkQueue) (ShardReporter, bool) {
	for q != nil {
		if r, ok := q.(ShardReporter); ok {
			return r, true
		}
		u, ok := q.(interface{ Unwrap() WorkQueue })
		if !ok {
			return nil, false
		}
		q = u.Unwrap()
	}
	return nil, false
}
