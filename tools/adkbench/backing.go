package main

import (
	"context"
	"fmt"
	"github.com/adkit/adk/modules/contract"
	"time"
)

// job is one item of a workload: seq numbers it in the recorder, tenant
// says whose it is (our backings: Item.Tenant of one queue; the peers, which
// have no tenants: one queue per tenant).
type job struct {
	seq    int64
	tenant int
	// delay parks the item (our backings only): an idle tenant that holds
	// work not yet due keeps its place in the rotation and must cost nothing.
	delay time.Duration
	// priority is the item's Item.Priority (our backings only; the
	// lifecycle scenario).
	priority int
}

// workload is what a backing sets up for one measurement.
type workload struct {
	tenants int // 1 or more; peers make one queue per tenant
	busy    int // the first busy tenants get the items; 0 means all
	conc    int // the worker count
	rec     *recorder
	// limits, on our backings, are set per tenant (by index) before the
	// load; sampled names a tenant whose live leases are sampled while
	// the workers run (the limits-cap scenario), "" none.
	limits  map[int]contract.Limits
	sampled string
	// lifecycle, on our backings, makes the runner's handler snooze some
	// items once and check what it is served (the lifecycle scenario);
	// the backing must have lifecycle controls. checkDrained makes stop
	// check, once the workers halted, that the queue holds nothing any
	// more: every item was completed.
	lifecycle    *lifecycleLoad
	checkDrained bool
	// retention, on our backings, is set on the bench queue before the
	// load (the history scenario); the backing must keep history.
	// checkKept makes stop check that the first item's history is there,
	// completed (with its claimed and completed events when events are
	// on).
	retention *contract.Retention
	checkKept bool
}

// backing is one queue under test. A measurement calls prepare, enqueue
// (possibly from several goroutines), start, stop and cleanup, in order.
type backing interface {
	name() string
	peer() bool
	prepare(ctx context.Context, w workload) error
	enqueue(ctx context.Context, jobs []job) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
	cleanup(ctx context.Context) error
	// enqueueChunk is how many jobs one enqueue call takes; enqueuers is
	// how many calls run at once while loading.
	enqueueChunk() int
	enqueuers() int
	// errs reports the errors the workers saw (not counting "empty").
	errs() (int64, error)
	// detail describes the last measurement's calls, "" when unknown.
	detail() string
}

func tenantName(i int) string { return fmt.Sprintf("t%02d", i) }
