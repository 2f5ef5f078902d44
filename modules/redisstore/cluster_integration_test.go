//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
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
