package adkotel_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

func TestInspectorGaugesPerTenant(t *testing.T) {
	r := newRig(t, policy.Policy{MaxAttempts: 1})
	ctx := context.Background()
	later := r.clock.Now().Add(time.Hour)
	items := []contract.Item{
		{Tenant: "acme", ID: "1"}, {Tenant: "acme", ID: "2"}, {Tenant: "acme", ID: "3", NotBefore: later},
		{Tenant: "beta", ID: "1"}, {Tenant: "beta", ID: "2"},
		{Tenant: "acme", ID: "x", Queue: "other"},
	}
	if err := r.queue.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	// One lease for each tenant; beta's is failed into the dead letter.
	leases, err := r.queue.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 2})
	if err != nil || len(leases) != 2 {
		t.Fatalf("claim: %v %v", leases, err)
	}
	for _, l := range leases {
		if l.Item.Tenant == "beta" {
			if _, err := r.queue.Fail(ctx, l, policy.Permanent(fmt.Errorf("no"))); err != nil {
				t.Fatal(err)
			}
		}
	}
	rm := r.collect(t)
	q := semconv.MessagingDestinationName("default")
	sys := semconv.MessagingSystemKey.String("memory")
	for _, c := range []struct {
		metric string
		tenant string
		want   int64
	}{
		{adkotel.MetricQueueReady, "acme", 1},
		{adkotel.MetricQueueLater, "acme", 1},
		{adkotel.MetricQueueLeased, "acme", 1},
		{adkotel.MetricQueueDead, "acme", 0},
		{adkotel.MetricQueueReady, "beta", 1},
		{adkotel.MetricQueueLeased, "beta", 0},
		{adkotel.MetricQueueDead, "beta", 1},
	} {
		if got := sumInt(t, rm, c.metric, q, sys, adkotel.TenantKey.String(c.tenant)); got != c.want {
			t.Errorf("%s{tenant=%s} = %d, want %d", c.metric, c.tenant, got, c.want)
		}
	}
	if got := sumInt(t, rm, adkotel.MetricQueueReady, semconv.MessagingDestinationName("other")); got != 1 {
		t.Errorf("other queue ready = %d, want 1", got)
	}
}

func TestTenantLimitSumsTheRest(t *testing.T) {
	r := newRig(t, policy.Policy{}, adkotel.WithTenantLimit(2))
	ctx := context.Background()
	var items []contract.Item
	// big has 3 items, mid 2, and five small tenants one each.
	for i := range 3 {
		items = append(items, contract.Item{Tenant: "big", ID: fmt.Sprint(i)})
	}
	for i := range 2 {
		items = append(items, contract.Item{Tenant: "mid", ID: fmt.Sprint(i)})
	}
	for i := range 5 {
		items = append(items, contract.Item{Tenant: fmt.Sprint("small", i), ID: "0"})
	}
	if err := r.queue.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	rm := r.collect(t)
	m, ok := findMetric(rm, adkotel.MetricQueueReady)
	if !ok {
		t.Fatal("no ready gauge")
	}
	got := map[string]int64{}
	for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
		v, _ := p.Attributes.Value(adkotel.TenantKey)
		got[v.AsString()] = p.Value
	}
	want := map[string]int64{"big": 3, "mid": 2, adkotel.OtherTenant: 5}
	if !maps.Equal(got, want) {
		t.Errorf("ready gauge by tenant = %v, want %v", got, want)
	}
}

func TestStatsCounters(t *testing.T) {
	r := newRig(t, policy.Policy{})
	ctx := context.Background()
	ch, unsubscribe := r.queue.(contract.Waker).Subscribe("")
	defer unsubscribe()
	if err := r.queue.Enqueue(ctx, contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("enqueue did not wake the subscriber")
	}
	want := r.store.Stats()
	if want.Wakes == 0 {
		t.Fatal("memstore counted no wake")
	}
	rm := r.collect(t)
	sys := semconv.MessagingSystemKey.String("memory")
	if got := sumInt(t, rm, adkotel.MetricWakes, sys); got != want.Wakes {
		t.Errorf("wakes = %d, want %d", got, want.Wakes)
	}
	for _, name := range []string{adkotel.MetricPoolAcquires, adkotel.MetricPoolWaits, adkotel.MetricPoolExhausted, adkotel.MetricListenerReconnects} {
		m, ok := findMetric(rm, name)
		if !ok {
			t.Errorf("no metric %s", name)
			continue
		}
		sum, ok := m.Data.(metricdata.Sum[int64])
		if !ok || !sum.IsMonotonic || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 0 {
			t.Errorf("%s = %+v, want one monotonic zero point (memory has no pool)", name, m.Data)
		}
	}
}
