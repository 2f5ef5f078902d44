package redisstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
	"github.com/redis/go-redis/v9"
)

// shardedQueue is the driver of a queue spread over several shards
// (Settings.Shards above one). Each shard is a workQueue of its own keys
// (shardQueueKeys), sharing the client, clock, settings and retry budget;
// a tenant's items, turn, limits and history live in the shard shardOf
// names, so every script stays within one slot. Calls about one tenant
// or one item go to its shard; a claim takes from several shards in one
// round of concurrent calls; the listings ask every shard and merge.
type shardedQueue struct {
	shards []*workQueue

	mu  sync.Mutex
	wrr map[string]*fairState // queue name -> what its claims remember
	gen uint64                // moved by every call that can give a tenant due work (touch)
}

var (
	_ contract.QueueDriver         = (*shardedQueue)(nil)
	_ contract.FlowController      = (*shardedQueue)(nil)
	_ contract.LifecycleController = (*shardedQueue)(nil)
	_ contract.HistoryKeeper       = (*shardedQueue)(nil)
)

func newShardedQueue(shards []*workQueue) *shardedQueue {
	return &shardedQueue{shards: shards, wrr: map[string]*fairState{}}
}

// first is the shard that answers for the whole queue where every shard
// would answer alike (subscriptions, pool stats, health).
func (s *shardedQueue) first() *workQueue { return s.shards[0] }

// index is the shard of tenant.
func (s *shardedQueue) index(tenant string) int { return shardOf(tenant, len(s.shards)) }

// of is the shard holding tenant's items.
func (s *shardedQueue) of(tenant string) *workQueue { return s.shards[s.index(tenant)] }

// each calls fn for every shard at once and returns the error of the
// lowest shard that failed.
func (s *shardedQueue) each(fn func(i int, q *workQueue) error) error {
	return s.some(nil, fn)
}

// some is each for the shards in only (every shard when only is nil).
func (s *shardedQueue) some(only []int, fn func(i int, q *workQueue) error) error {
	if only == nil {
		only = make([]int, len(s.shards))
		for i := range only {
			only[i] = i
		}
	}
	errs := make([]error, len(s.shards))
	if len(only) == 1 {
		i := only[0]
		return fn(i, s.shards[i])
	}
	var wg sync.WaitGroup
	for _, i := range only {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i, s.shards[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scope is the shards a filter on tenant reads: the tenant's alone when
// it names one, every shard otherwise.
func (s *shardedQueue) scope(tenant string) []int {
	if tenant != "" {
		return []int{s.index(tenant)}
	}
	return nil
}

// sum runs fn on the shards of scope and adds up the counts.
func (s *shardedQueue) sum(only []int, fn func(k int, q *workQueue) (int, error)) (int, error) {
	counts := make([]int, len(s.shards))
	err := s.some(only, func(i int, q *workQueue) error {
		n, err := fn(i, q)
		counts[i] = n
		return err
	})
	total := 0
	for _, n := range counts {
		total += n
	}
	return total, err
}

// Enqueue sends each shard its tenants' items, the shards at once.
func (s *shardedQueue) Enqueue(ctx context.Context, items ...contract.Item) error {
	_, err := s.enqueue(ctx, items, false)
	return err
}

// EnqueueReport is Enqueue reporting each item's outcome, in input order.
func (s *shardedQueue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	return s.enqueue(ctx, items, true)
}

func (s *shardedQueue) enqueue(ctx context.Context, items []contract.Item, report bool) ([]contract.EnqueueResult, error) {
	defer s.touch()
	by := make([][]contract.Item, len(s.shards))
	at := make([][]int, len(s.shards))
	var only []int
	for i, it := range items {
		k := s.index(it.Tenant)
		if by[k] == nil {
			only = append(only, k)
		}
		by[k] = append(by[k], it)
		at[k] = append(at[k], i)
	}
	if len(only) == 0 {
		if report {
			return []contract.EnqueueResult{}, nil
		}
		return nil, nil
	}
	var out []contract.EnqueueResult
	if report {
		out = make([]contract.EnqueueResult, len(items))
	}
	slices.Sort(only)
	err := s.some(only, func(k int, q *workQueue) error {
		res, err := q.enqueue(ctx, by[k], report)
		for j, r := range res {
			out[at[k][j]] = r
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Heartbeat goes to the lease's shard.
func (s *shardedQueue) Heartbeat(ctx context.Context, l contract.Lease, extend time.Duration) (contract.Lease, error) {
	return s.of(l.Item.Tenant).Heartbeat(ctx, l, extend)
}

// Fail goes to the lease's shard.
func (s *shardedQueue) Fail(ctx context.Context, l contract.Lease, cause error) (policy.Decision, error) {
	defer s.touch()
	return s.of(l.Item.Tenant).Fail(ctx, l, cause)
}

// Complete completes each shard's leases at once and names the lost and
// cancelled ones in the order of leases.
func (s *shardedQueue) Complete(ctx context.Context, leases ...contract.Lease) error {
	by, only := s.splitLeases(leases)
	if len(only) == 0 {
		return nil
	}
	settled := make([]error, len(s.shards))
	err := s.some(only, func(k int, q *workQueue) error {
		err := q.Complete(ctx, by[k]...)
		if isSettle(err) {
			settled[k], err = err, nil
		}
		return err
	})
	if err != nil {
		return err
	}
	return mergeSettled(leases, settled)
}

// splitLeases groups leases by shard and lists the shards that have any.
func (s *shardedQueue) splitLeases(leases []contract.Lease) ([][]contract.Lease, []int) {
	by := make([][]contract.Lease, len(s.shards))
	var only []int
	for _, l := range leases {
		k := s.index(l.Item.Tenant)
		if by[k] == nil {
			only = append(only, k)
		}
		by[k] = append(by[k], l)
	}
	slices.Sort(only)
	return by, only
}

// isSettle reports whether err only names leases lost or cancelled.
func isSettle(err error) bool {
	if err == nil {
		return false
	}
	var lle *contract.LeaseLostError
	var ce *contract.CancelledError
	if !errors.As(err, &lle) && !errors.As(err, &ce) {
		return false
	}
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range u.Unwrap() {
			if !errors.As(e, &lle) && !errors.As(e, &ce) {
				return false
			}
		}
	}
	return true
}

// mergeSettled joins the shards' lost and cancelled leases into one
// settle error, each list in the order of leases.
func mergeSettled(leases []contract.Lease, settled []error) error {
	var lost, cancelled []contract.ItemKey
	for _, err := range settled {
		if err == nil {
			continue
		}
		var lle *contract.LeaseLostError
		var ce *contract.CancelledError
		if errors.As(err, &lle) {
			lost = append(lost, lle.Items...)
		}
		if errors.As(err, &ce) {
			cancelled = append(cancelled, ce.Items...)
		}
	}
	if lost == nil && cancelled == nil {
		return nil
	}
	pos := make(map[contract.ItemKey]int, len(leases))
	for i := len(leases) - 1; i >= 0; i-- {
		pos[leases[i].Key()] = i
	}
	byPos := func(a, b contract.ItemKey) int { return cmp.Compare(pos[a], pos[b]) }
	slices.SortStableFunc(lost, byPos)
	slices.SortStableFunc(cancelled, byPos)
	return contract.SettleError(lost, cancelled)
}

// Reap reaps every shard.
func (s *shardedQueue) Reap(ctx context.Context, name string) (int, error) {
	defer s.touch()
	return s.sum(nil, func(_ int, q *workQueue) (int, error) { return q.Reap(ctx, name) })
}

// Requeue requeues the matching dead letters of every shard the filter
// can match.
func (s *shardedQueue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	defer s.touch()
	return s.sum(s.scope(f.Tenant), func(_ int, q *workQueue) (int, error) { return q.Requeue(ctx, f) })
}

// Purge deletes the matching dead letters of every shard the filter can
// match.
func (s *shardedQueue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return s.sum(s.scope(f.Tenant), func(_ int, q *workQueue) (int, error) { return q.Purge(ctx, f) })
}

// Subscribe subscribes once for every shard: they all publish on the
// queue's one channel.
func (s *shardedQueue) Subscribe(queue string) (<-chan struct{}, func()) {
	return s.first().Subscribe(queue)
}

// Stats are the client's, which the shards share.
func (s *shardedQueue) Stats() contract.Stats { return s.first().Stats() }

// Health is the servers' health, as one shard reports it, and the number
// of shards.
func (s *shardedQueue) Health(ctx context.Context) (contract.Health, error) {
	h, err := s.first().Health(ctx)
	if err == nil {
		h.Details["shards"] = strconv.Itoa(len(s.shards))
	}
	return h, err
}

// Queues lists the queues that hold items in any shard, sorted.
func (s *shardedQueue) Queues(ctx context.Context) ([]string, error) {
	per := make([][]string, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.Queues(ctx)
		return err
	})
	if err != nil {
		return []string{}, err
	}
	out := []string{}
	for _, names := range per {
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Tenants merges the shards' tenants, by tenant name.
func (s *shardedQueue) Tenants(ctx context.Context, name string) ([]contract.TenantStats, error) {
	per := make([][]contract.TenantStats, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.Tenants(ctx, name)
		return err
	})
	out := []contract.TenantStats{}
	if err != nil {
		return out, err
	}
	for _, ts := range per {
		out = append(out, ts...)
	}
	slices.SortStableFunc(out, func(a, b contract.TenantStats) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// Item reads the item from its tenant's shard.
func (s *shardedQueue) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	return s.of(key.Tenant).Item(ctx, key)
}

// Cancel goes to the item's shard.
func (s *shardedQueue) Cancel(ctx context.Context, key contract.ItemKey, reason string) (contract.ItemState, error) {
	defer s.touch()
	return s.of(key.Tenant).Cancel(ctx, key, reason)
}

// CancelMatching cancels the matching items of every shard the filter
// can match.
func (s *shardedQueue) CancelMatching(ctx context.Context, f contract.CancelFilter, reason string) (int, error) {
	defer s.touch()
	return s.sum(s.scope(f.Tenant), func(_ int, q *workQueue) (int, error) { return q.CancelMatching(ctx, f, reason) })
}

// CountMatching counts the matching items of every shard the filter can
// match.
func (s *shardedQueue) CountMatching(ctx context.Context, f contract.CancelFilter) (int, error) {
	return s.sum(s.scope(f.Tenant), func(_ int, q *workQueue) (int, error) { return q.CountMatching(ctx, f) })
}

// PurgeCancelled purges every shard.
func (s *shardedQueue) PurgeCancelled(ctx context.Context, name string, before time.Time) (int, error) {
	return s.sum(nil, func(_ int, q *workQueue) (int, error) { return q.PurgeCancelled(ctx, name, before) })
}

// Snooze goes to the lease's shard.
func (s *shardedQueue) Snooze(ctx context.Context, l contract.Lease, d time.Duration) (policy.Decision, error) {
	defer s.touch()
	return s.of(l.Item.Tenant).Snooze(ctx, l, d)
}

// Wait goes to the lease's shard.
func (s *shardedQueue) Wait(ctx context.Context, l contract.Lease, w contract.WaitRequest) error {
	return s.of(l.Item.Tenant).Wait(ctx, l, w)
}

// Signal goes to the item's shard.
func (s *shardedQueue) Signal(ctx context.Context, key contract.ItemKey, signal string, payload []byte) error {
	defer s.touch()
	return s.of(key.Tenant).Signal(ctx, key, signal, payload)
}

// Pause pauses the queue in every shard, or the tenant in its own.
func (s *shardedQueue) Pause(ctx context.Context, name, tenant string) error {
	defer s.touch()
	return s.some(s.scope(tenant), func(_ int, q *workQueue) error { return q.Pause(ctx, name, tenant) })
}

// Resume resumes the queue in every shard, or the tenant in its own.
func (s *shardedQueue) Resume(ctx context.Context, name, tenant string) error {
	defer s.touch()
	return s.some(s.scope(tenant), func(_ int, q *workQueue) error { return q.Resume(ctx, name, tenant) })
}

// Paused merges the shards' pause states: the queue is paused when its
// first shard says so (a queue pause is written to every shard), and the
// paused tenants are every shard's.
func (s *shardedQueue) Paused(ctx context.Context, name string) (contract.PauseState, error) {
	per := make([]contract.PauseState, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.Paused(ctx, name)
		return err
	})
	out := contract.PauseState{Queue: name, Tenants: []string{}}
	if err != nil {
		return out, err
	}
	out.Paused = per[0].Paused
	for _, p := range per {
		out.Tenants = append(out.Tenants, p.Tenants...)
	}
	slices.Sort(out.Tenants)
	return out, nil
}

// SetLimits sets the queue's default in every shard, or a tenant's in its
// own.
func (s *shardedQueue) SetLimits(ctx context.Context, name, tenant string, l contract.Limits) error {
	defer s.touch()
	return s.some(s.scope(tenant), func(_ int, q *workQueue) error { return q.SetLimits(ctx, name, tenant, l) })
}

// Limits merges the shards' limits: the default as the first shard holds
// it, every tenant's own from its shard.
func (s *shardedQueue) Limits(ctx context.Context, name string) (contract.QueueLimits, error) {
	per := make([]contract.QueueLimits, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.Limits(ctx, name)
		return err
	})
	if err != nil {
		return contract.QueueLimits{}, err
	}
	out := per[0]
	out.Tenants = map[string]contract.Limits{}
	for i, ql := range per {
		for t, l := range ql.Tenants {
			if s.index(t) == i {
				out.Tenants[t] = l
			}
		}
	}
	return out, nil
}

// Charge goes to the tenant's shard.
func (s *shardedQueue) Charge(ctx context.Context, name, tenant string, u contract.Usage) error {
	return s.of(tenant).Charge(ctx, name, tenant, u)
}

// FlowStatus merges the shards' tenants, by tenant name.
func (s *shardedQueue) FlowStatus(ctx context.Context, name string) ([]contract.TenantFlow, error) {
	per := make([][]contract.TenantFlow, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.FlowStatus(ctx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []contract.TenantFlow
	for i, fs := range per {
		for _, f := range fs {
			if s.index(f.Tenant) == i {
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b contract.TenantFlow) int { return strings.Compare(a.Tenant, b.Tenant) })
	if out == nil {
		out = []contract.TenantFlow{}
	}
	return out, nil
}

// SetRetention sets the retention in every shard.
func (s *shardedQueue) SetRetention(ctx context.Context, name string, r contract.Retention) error {
	return s.each(func(_ int, q *workQueue) error { return q.SetRetention(ctx, name, r) })
}

// Retention reads the retention of the first shard (SetRetention writes
// them all).
func (s *shardedQueue) Retention(ctx context.Context, name string) (contract.Retention, error) {
	return s.first().Retention(ctx, name)
}

// History reads the item's history from its shard.
func (s *shardedQueue) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	return s.of(key.Tenant).History(ctx, key)
}

// Find merges the shards' items with the ID, by tenant.
func (s *shardedQueue) Find(ctx context.Context, name, id string) ([]contract.Item, error) {
	per := make([][]contract.Item, len(s.shards))
	err := s.each(func(i int, q *workQueue) error {
		var err error
		per[i], err = q.Find(ctx, name, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := []contract.Item{}
	for _, items := range per {
		out = append(out, items...)
	}
	slices.SortStableFunc(out, func(a, b contract.Item) int { return strings.Compare(a.Tenant, b.Tenant) })
	if len(out) > contract.MaxFound {
		out = out[:contract.MaxFound]
	}
	return out, nil
}

// Prune prunes every shard once. A retention Count is the queue's: each
// shard keeps those of its finished items that are among the queue's
// Count newest.
func (s *shardedQueue) Prune(ctx context.Context, name string) (int, error) {
	r, err := s.Retention(ctx, name)
	if err != nil {
		return 0, err
	}
	keep := make([]string, len(s.shards))
	if r.Count > 0 {
		newest := make([][]string, len(s.shards))
		err := s.each(func(k int, q *workQueue) error {
			return q.read(ctx, func(ctx context.Context) error {
				var err error
				newest[k], err = q.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: q.keys.queue(name) + "fin", Start: "+", Stop: "[0",
					ByLex: true, Rev: true, Count: int64(r.Count)}).Result()
				return err
			})
		})
		if err != nil {
			return 0, err
		}
		all := mergeShards(newest, func(a, b string) int { return strings.Compare(b, a) })
		kept := make([]int, len(s.shards))
		for _, m := range all[:min(len(all), r.Count)] {
			kept[m.shard]++
		}
		for k, n := range kept {
			keep[k] = strconv.Itoa(n)
		}
	}
	return s.sum(nil, func(k int, q *workQueue) (int, error) { return q.prune(ctx, name, keep[k]) })
}
