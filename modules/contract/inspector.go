package contract

import (
	"context"
	"time"
)

// TenantStats are one tenant's numbers in one queue.
type TenantStats struct {
	Tenant string `json:"tenant"`
	Ready  int64  `json:"ready"`  // queued and due now
	Later  int64  `json:"later"`  // queued with NotBefore in the future
	Leased int64  `json:"leased"` // held by workers
	Dead   int64  `json:"dead"`
	Served int64  `json:"served"` // turns given to the tenant by claims, since the queue began (or since the backing started counting)
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
