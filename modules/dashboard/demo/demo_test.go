package demo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The workload really runs (real timers drive the runners), so the test
// polls with a bounded deadline for what it must produce: completed work,
// dead letters including the hostile one, and a reaped lease.
func TestRunProducesTheShowcase(t *testing.T) {
	store := memstore.New(nil, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: demo.DefaultKeepVersions}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- demo.Run(ctx, demo.Config{
			Queue: store, State: store, Tenants: 5, Backlog: 200, Arrivals: 5, Workers: 2, Concurrency: 4,
			MinLatency: time.Millisecond, MaxLatency: 3 * time.Millisecond,
			FailureRate: 0.2, PermanentShare: 0.5,
			CrashEvery: 50 * time.Millisecond, CrashLease: 100 * time.Millisecond, LeaseFor: 300 * time.Millisecond, Seed: 7,
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	deadline := time.Now().Add(20 * time.Second)
	var served, dead int64
	hostileDead, reaped := false, false
	var doomed *contract.ItemKey
	for time.Now().Before(deadline) {
		stats, err := store.Tenants(ctx, contract.DefaultQueue)
		if err != nil {
			t.Fatal(err)
		}
		served, dead = 0, 0
		for _, s := range stats {
			served += s.Served
			dead += s.Dead
		}
		info, err := store.Item(ctx, contract.ItemKey{Tenant: demo.HostileTenant, Queue: contract.DefaultQueue, ID: demo.HostileID})
		hostileDead = err == nil && info.Item.State == contract.StateDead
		// A doomed worker's item must leave its lease without the worker
		// ever settling it: only the reaper can do that.
		if doomed == nil {
			doomed = doomedLease(ctx, store)
		} else if !reaped {
			info, err := store.Item(ctx, *doomed)
			reaped = err != nil || info.Lease == nil || info.Lease.Worker != "worker-doomed"
		}
		if served > 300 && dead > 2 && hostileDead && reaped {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if served <= 300 || dead <= 2 || !hostileDead || !reaped {
		t.Fatalf("after the deadline: served %d, dead %d, hostile dead %v, reaped %v", served, dead, hostileDead, reaped)
	}
	// The queue keeps its finished items and their events.
	if r, err := store.Retention(ctx, contract.DefaultQueue); err != nil || r != demo.DefaultRetention {
		t.Errorf("retention %+v (%v), want %+v", r, err, demo.DefaultRetention)
	}
	fin, err := store.Finished(ctx, contract.FinishedQuery{Queue: contract.DefaultQueue, State: contract.StateCompleted, Page: contract.PageRequest{Limit: 1}})
	if err != nil || len(fin.Items) != 1 {
		t.Fatalf("finished items kept: %+v (%v)", fin, err)
	}
	h, err := store.History(ctx, fin.Items[0].Key())
	if err != nil || len(h.Events) < 3 || h.Events[len(h.Events)-1].Kind != contract.EventCompleted {
		t.Errorf("a completed item's history: %+v (%v)", h, err)
	}
	// Its run was written by the workers in steps, each fenced by the
	// lease, and the store kept every step.
	it := fin.Items[0]
	run, err := store.GetRun(ctx, it.Tenant, it.ID)
	if err != nil || run.Status != "done" || run.Version < 3 || run.Fence <= 0 || run.Counters.Iterations < 1 || run.Counters.InputTokens <= 0 {
		t.Fatalf("the completed item's run: %+v (%v)", run, err)
	}
	versions, err := store.ListRunVersions(ctx, it.Tenant, it.ID, contract.PageRequest{})
	if err != nil || len(versions.Versions) < 3 {
		t.Fatalf("the run's versions: %+v (%v)", versions, err)
	}
	var steps []string
	for _, v := range versions.Versions {
		steps = append(steps, v.Status)
		if v.Fence <= 0 {
			t.Errorf("version %d was written unfenced", v.Version)
		}
	}
	if steps[0] != "done" || !slices.Contains(steps, "calling tools") || !slices.Contains(steps, "planning") {
		t.Errorf("the run's versions, newest first: %v", steps)
	}
	if got := demo.Tenants(20); len(got) != 20 || got[0] != demo.NoisyTenant {
		t.Errorf("Tenants(20) = %v", got)
	}
}

// doomedLease returns the key of an item the doomed worker holds, if any.
func doomedLease(ctx context.Context, store *memstore.Store) *contract.ItemKey {
	page, err := store.Leases(ctx, contract.DefaultQueue, contract.PageRequest{Limit: 1000})
	if err != nil {
		return nil
	}
	for _, l := range page.Leases {
		if l.Worker == "worker-doomed" {
			k := l.Key()
			return &k
		}
	}
	return nil
}
