//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// tenantRecorder remembers every tenant a suite touched, so the test can
// check that they did not all land in one slot.
type tenantRecorder struct {
	contract.StateStore
	mu      *sync.Mutex
	tenants map[string]bool
}

func (r tenantRecorder) note(t string) {
	r.mu.Lock()
	r.tenants[t] = true
	r.mu.Unlock()
}

func (r tenantRecorder) PutRun(ctx context.Context, run contract.Run) (*contract.Run, error) {
	r.note(run.Tenant)
	return r.StateStore.PutRun(ctx, run)
}

func (r tenantRecorder) PatchRun(ctx context.Context, tenant, id string, p contract.Patch) (*contract.Run, error) {
	r.note(tenant)
	return r.StateStore.PatchRun(ctx, tenant, id, p)
}

// The RunKeeper methods pass through, so the Fencing and History areas run
// on the cluster too.

func (r tenantRecorder) keeper() contract.RunKeeper { return r.StateStore.(contract.RunKeeper) }

func (r tenantRecorder) KeepsRuns() bool {
	_, ok := contract.AsRunKeeper(r.StateStore)
	return ok
}

func (r tenantRecorder) DeleteRunFenced(ctx context.Context, tenant, id string, fence int64) error {
	r.note(tenant)
	return r.keeper().DeleteRunFenced(ctx, tenant, id, fence)
}

func (r tenantRecorder) ListRunVersions(ctx context.Context, tenant, id string, page contract.PageRequest) (contract.RunVersionPage, error) {
	return r.keeper().ListRunVersions(ctx, tenant, id, page)
}

func (r tenantRecorder) GetRunVersion(ctx context.Context, tenant, id string, version int64) (*contract.Run, error) {
	return r.keeper().GetRunVersion(ctx, tenant, id, version)
}

func (r tenantRecorder) ForkRun(ctx context.Context, tenant, id string, version int64, newID string) (*contract.Run, error) {
	r.note(tenant)
	return r.keeper().ForkRun(ctx, tenant, id, version, newID)
}

// TestCluster runs both suites unchanged against a three-master Redis
// Cluster this test starts, and checks that the suite's tenants hashed to
// several slots on several masters.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	client := cl.Client(t, nil)
	ctx := context.Background()

	var mu sync.Mutex
	tenants := map[string]bool{}
	inner := stateFactory(client)
	t.Run("StateStore", func(t *testing.T) {
		contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
			return tenantRecorder{StateStore: inner(t, clock, p), mu: &mu, tenants: tenants}
		})
	})
	namespaces := map[string]bool{}
	innerQ := queueFactory(client)
	t.Run("WorkQueue", func(t *testing.T) {
		contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
			q := innerQ(t, clock, p)
			mu.Lock()
			namespaces[t.Name()] = true
			mu.Unlock()
			return q
		})
	})

	// The same suite with every queue over three shards: on this cluster
	// one per master.
	t.Run("WorkQueueSharded", func(t *testing.T) {
		contracttest.WorkQueue(t, shardedFactory(client, 3))
	})

	t.Run("ShardsOnMasters", func(t *testing.T) { shardsOnMasters(t, client) })

	t.Run("LifecycleReopen", func(t *testing.T) { lifecycleReopen(t, client, "adkclusterlife") })

	slots := map[int64]bool{}
	for tenant := range tenants {
		// The tenant's hash tag is its length-prefixed name.
		slot, err := client.ClusterKeySlot(ctx, "adk:state:{"+strconv.Itoa(len(tenant))+":"+tenant+"}:run:1:x").Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot] = true
	}
	if len(tenants) < 2 || len(slots) < 2 {
		t.Errorf("the state suite's %d tenants hashed to %d slot(s); want at least 2", len(tenants), len(slots))
	}
	// Preflight reads every master: the harness runs them without
	// persistence, so a durable store is refused and a volatile one is not.
	if _, err := redisstore.Preflight(ctx, client, redisstore.Settings{Volatile: true}); err != nil {
		t.Errorf("preflight on the cluster (Volatile): %v", err)
	}
	var pe *contract.PreflightError
	if _, err := redisstore.Preflight(ctx, client, redisstore.Settings{}); !errors.As(err, &pe) || pe.Setting != "persistence" {
		t.Errorf("preflight on the cluster (durable by default): got %v, want a persistence refusal", err)
	}

	t.Logf("state suite: %d tenants over %d slots; queue suite: %d queues", len(tenants), len(slots), len(namespaces))
}

// shardsOnMasters checks that three shards on a three-master cluster
// start one per master, and that ShardReporter counts each one's items.
func shardsOnMasters(t *testing.T, client *redis.ClusterClient) {
	ctx := context.Background()
	ns := redistest.Namespace(t, client)
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns, Shards: 3, Volatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var items []contract.Item
	for i := range 30 {
		items = append(items, contract.Item{Tenant: "t" + strconv.Itoa(i), ID: "x"})
	}
	if err := q.Enqueue(ctx, items...); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 6}); err != nil {
		t.Fatal(err)
	}
	shards, err := q.Shards(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	queued, leased := 0, 0
	for i, s := range shards {
		if s.Shard != i || s.Slot < i*16384/3 || s.Slot >= (i+1)*16384/3 || s.Node == "" {
			t.Errorf("shard %d: %+v, want its slot in the %d-th third of the slots and a node", i, s, i+1)
		}
		nodes[s.Node] = true
		queued += s.Queued
		leased += s.Leased
		if s.Tenants == 0 {
			t.Errorf("shard %d holds no tenant of 30", i)
		}
	}
	if len(shards) != 3 || len(nodes) != 3 || queued != 24 || leased != 6 {
		t.Errorf("Shards = %+v: want 3 shards on 3 masters holding 24 queued and 6 leased", shards)
	}
	if shards[0].ClaimRate+shards[1].ClaimRate+shards[2].ClaimRate != 6.0/60 {
		t.Errorf("claim rates %v %v %v, want 6 claims a minute in all", shards[0].ClaimRate, shards[1].ClaimRate, shards[2].ClaimRate)
	}
}
