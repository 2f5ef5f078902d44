package adkotel

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/adkit/adk/modules/contract"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
)

// Metric names of our own. Where the messaging conventions define a metric
// (messaging.client.sent.messages, messaging.client.consumed.messages,
// messaging.process.duration) that one is used instead.
const (
	MetricClaimDuration      = "adk.claim.duration"
	MetricCompleted          = "adk.completed"
	MetricFailed             = "adk.failed"
	MetricDead               = "adk.dead"
	MetricReaped             = "adk.reaped"
	MetricDuplicates         = "adk.enqueue.duplicates"
	MetricPruned             = "adk.pruned"
	MetricHeld               = "adk.claim.held"
	MetricQueueReady         = "adk.queue.ready"
	MetricQueueLater         = "adk.queue.later"
	MetricQueueLeased        = "adk.queue.leased"
	MetricQueueDead          = "adk.queue.dead"
	MetricPoolAcquires       = "adk.pool.acquires"
	MetricPoolWaits          = "adk.pool.waits"
	MetricPoolExhausted      = "adk.pool.exhausted"
	MetricListenerReconnects = "adk.listener.reconnects"
	MetricWakes              = "adk.wakes"
	MetricStateDuration      = "adk.state.duration"
	MetricFencedOut          = "adk.run.fenced_out"
)

// inspectTimeout bounds one collection of the Inspector gauges, so a slow
// backing delays a metrics export by at most this much.
const inspectTimeout = 2 * time.Second

// maxInspectedQueues bounds the queues one collection reads.
const maxInspectedQueues = 100

// queueMetrics are the synchronous instruments of a wrapped queue.
type queueMetrics struct {
	claimDuration metric.Float64Histogram
	sent          messagingconv.ClientSentMessages
	consumed      messagingconv.ClientConsumedMessages
	opDuration    messagingconv.ClientOperationDuration
	completed     metric.Int64Counter
	failed        metric.Int64Counter
	dead          metric.Int64Counter
	reaped        metric.Int64Counter
	held          metric.Int64Counter
	duplicates    metric.Int64Counter
	pruned        metric.Int64Counter
}

func newQueueMetrics(m metric.Meter) queueMetrics {
	var qm queueMetrics
	var err error
	qm.claimDuration, err = m.Float64Histogram(MetricClaimDuration,
		metric.WithDescription("Duration of claims, including those that found nothing."),
		metric.WithUnit("s"))
	if err != nil {
		otel.Handle(err)
		qm.claimDuration = noop.Float64Histogram{}
	}
	if qm.sent, err = messagingconv.NewClientSentMessages(m); err != nil {
		otel.Handle(err)
	}
	if qm.consumed, err = messagingconv.NewClientConsumedMessages(m); err != nil {
		otel.Handle(err)
	}
	if qm.opDuration, err = messagingconv.NewClientOperationDuration(m); err != nil {
		otel.Handle(err)
	}
	qm.completed = counter(m, MetricCompleted, "Items completed.")
	qm.failed = counter(m, MetricFailed, "Failed attempts settled with Fail, whatever the policy decided.")
	qm.dead = counter(m, MetricDead, "Items the policy sent to the dead letter after a Fail.")
	qm.reaped = counter(m, MetricReaped, "Expired leases handed back to the policy by Reap.")
	qm.duplicates = counter(m, MetricDuplicates, "Items an EnqueueReport left as they were: their ID was there already, or within its uniqueness window.")
	qm.pruned = counter(m, MetricPruned, "Finished items Prune removed under the queue's retention.")
	qm.held = counter(m, MetricHeld, "Tenants with due work a claim passed over because a limit held them back, by reason.")
	return qm
}

func counter(m metric.Meter, name, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{item}"))
	if err != nil {
		otel.Handle(err)
		return noop.Int64Counter{}
	}
	return c
}

// registerInspectorGauges reports per-tenant depth and leases by reading
// the Inspector at collection time, so nothing is counted twice and the
// numbers are the backing's own.
func registerInspectorGauges(m metric.Meter, ins contract.Inspector, system string, tenantLimit int) {
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit("{item}"))
		if err != nil {
			otel.Handle(err)
			return noop.Int64ObservableGauge{}
		}
		return g
	}
	ready := gauge(MetricQueueReady, "Queued items that are due, per tenant.")
	later := gauge(MetricQueueLater, "Queued items delayed to a later time, per tenant.")
	leased := gauge(MetricQueueLeased, "Items held under a lease, per tenant.")
	dead := gauge(MetricQueueDead, "Items in the dead letter, per tenant.")
	sys := systemAttr(system)
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
		defer cancel()
		queues, err := ins.Queues(ctx)
		if err != nil {
			return err
		}
		if len(queues) > maxInspectedQueues {
			queues = queues[:maxInspectedQueues]
		}
		for _, q := range queues {
			stats, err := ins.Tenants(ctx, q)
			if err != nil {
				return err
			}
			for _, s := range limitTenants(stats, tenantLimit) {
				opt := metric.WithAttributes(sys, semconv.MessagingDestinationName(q), TenantKey.String(s.Tenant))
				o.ObserveInt64(ready, s.Ready, opt)
				o.ObserveInt64(later, s.Later, opt)
				o.ObserveInt64(leased, s.Leased, opt)
				o.ObserveInt64(dead, s.Dead, opt)
			}
		}
		return nil
	}, ready, later, leased, dead)
	if err != nil {
		otel.Handle(err)
	}
}

// limitTenants keeps the limit tenants with the most work and sums the
// rest under OtherTenant.
func limitTenants(stats []contract.TenantStats, limit int) []contract.TenantStats {
	if len(stats) <= limit {
		return stats
	}
	sorted := slices.Clone(stats)
	load := func(s contract.TenantStats) int64 { return s.Ready + s.Later + s.Leased + s.Dead }
	slices.SortFunc(sorted, func(a, b contract.TenantStats) int {
		return cmp.Or(cmp.Compare(load(b), load(a)), cmp.Compare(a.Tenant, b.Tenant))
	})
	out := sorted[:limit:limit]
	other := contract.TenantStats{Tenant: OtherTenant}
	for _, s := range sorted[limit:] {
		other.Ready += s.Ready
		other.Later += s.Later
		other.Leased += s.Leased
		other.Dead += s.Dead
	}
	return append(out, other)
}

// registerStatsCounters exposes a backing's plain Stats as observable
// counters: the backing keeps the numbers, we only read them.
func registerStatsCounters(m metric.Meter, src contract.StatsSource, system string) {
	type stat struct {
		name, desc, unit string
		get              func(contract.Stats) int64
	}
	stats := []stat{
		{MetricPoolAcquires, "Connections acquired from the pool.", "{acquire}", func(s contract.Stats) int64 { return s.PoolAcquires }},
		{MetricPoolWaits, "Pool acquires that had to wait for a connection.", "{acquire}", func(s contract.Stats) int64 { return s.PoolWaits }},
		{MetricPoolExhausted, "Pool acquires that gave up: no connection in time.", "{acquire}", func(s contract.Stats) int64 { return s.PoolExhausted }},
		{MetricListenerReconnects, "Times the wake-up listener reconnected.", "{reconnect}", func(s contract.Stats) int64 { return s.ListenerReconnects }},
		{MetricWakes, "Wake-up signals received.", "{wake}", func(s contract.Stats) int64 { return s.Wakes }},
	}
	insts := make([]metric.Int64ObservableCounter, len(stats))
	obs := make([]metric.Observable, len(stats))
	for i, s := range stats {
		c, err := m.Int64ObservableCounter(s.name, metric.WithDescription(s.desc), metric.WithUnit(s.unit))
		if err != nil {
			otel.Handle(err)
			c = noop.Int64ObservableCounter{}
		}
		insts[i], obs[i] = c, c
	}
	opt := metric.WithAttributeSet(attribute.NewSet(systemAttr(system)))
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		cur := src.Stats()
		for i, s := range stats {
			o.ObserveInt64(insts[i], s.get(cur), opt)
		}
		return nil
	}, obs...)
	if err != nil {
		otel.Handle(err)
	}
}
