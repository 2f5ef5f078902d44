package memstore

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Store is an in-process StateStore, RunKeeper, WorkQueue, Inspector,
// Waker, StatsSource, CompleteClaimer, FlowController, LifecycleController
// and HistoryKeeper. All its methods are safe for concurrent
// use. Everything it holds is lost when the process exits.
//
// Its queue and state methods are the contract's front doors, which check
// every call before the store sees it; the store itself is the driver
// behind them.
type Store struct {
	contract.QueueFront
	contract.StateFront
	s *store
}

// store is the driver behind a Store's front doors: it is called only
// with input the fronts have checked and normalised.
type store struct {
	clock       contract.Clock
	policy      policy.Policy
	maxBytes    int
	recentTurns int
	runPolicy   contract.RunPolicy // fences and versions of runs

	mu sync.Mutex

	runs        map[runKey]*contract.Run
	runSeq      int64
	tenantRuns  map[string]*tree[int64, *contract.Run]
	sessionRuns map[runKey]*tree[int64, *contract.Run] // keyed by tenant and session
	kept        map[runKey]*runVersions                // each run's earlier versions (versions.go)

	live   map[int64]*entry // the leased entries by token: a settle finds its entry in a map of the live leases, not of every item
	queues map[string]*queue
	tokens int64 // the last fencing token issued, store-wide so none repeats
	seq    int64 // orders ready items that fall due together, and dead letters

	warmed int64 // the sum queue.warm returns, kept so its reads are not dropped

	subs     map[string]map[*subscription]struct{}
	wakes    int64
	lastWake time.Time
}

// Interfaces a *Store satisfies.
var (
	_ contract.StateStore  = (*Store)(nil)
	_ contract.WorkQueue   = (*Store)(nil)
	_ contract.Inspector   = (*Store)(nil)
	_ contract.Waker       = (*Store)(nil)
	_ contract.StatsSource = (*Store)(nil)

	_ contract.CompleteClaimer = (*Store)(nil)
	_ contract.FlowController  = (*Store)(nil)
	_ contract.FlowController  = (*store)(nil)

	_ contract.LifecycleController = (*Store)(nil)
	_ contract.LifecycleController = (*store)(nil)

	_ contract.RunKeeper = (*Store)(nil)
	_ contract.RunKeeper = (*store)(nil)

	_ contract.QueueDriver = (*store)(nil)
	_ contract.StateDriver = (*store)(nil)
)

// DefaultRecentTurns is how many turns a queue remembers for
// [Store.Rotation] unless [Settings.RecentTurns] says otherwise.
const DefaultRecentTurns = 1000

// Settings configure a Store built by [New]. The zero value is usable.
type Settings struct {
	// Policy decides retries and dead letters for Fail and Reap; its zero
	// fields take the defaults of package policy.
	Policy policy.Policy
	// MaxValueBytes caps a run's Data and an item's Payload. Zero or less
	// means contract.DefaultMaxValueBytes.
	MaxValueBytes int
	// RecentTurns is how many of the latest turns each queue keeps for
	// [Store.Rotation]. Zero or less means DefaultRecentTurns.
	RecentTurns int
	// Runs says how the state store treats fences and versions of runs;
	// the zero value keeps no versions and lets unfenced writes land. A
	// policy that fails contract.ValidateRunPolicy makes every state call
	// answer its *contract.ValidationError.
	Runs contract.RunPolicy
}

// New returns an empty store that reads time from clock (the wall clock
// when nil). It is the in-process backing's one constructor: the durable
// backings' Open(ctx, conn, clock, Settings) checks a server first, and
// memory has none to check.
func New(clock contract.Clock, settings Settings) *Store {
	if clock == nil {
		clock = contract.SystemClock{}
	}
	if settings.MaxValueBytes <= 0 {
		settings.MaxValueBytes = contract.DefaultMaxValueBytes
	}
	if settings.RecentTurns <= 0 {
		settings.RecentTurns = DefaultRecentTurns
	}
	s := &store{
		clock:       clock,
		policy:      settings.Policy,
		maxBytes:    settings.MaxValueBytes,
		recentTurns: settings.RecentTurns,
		runPolicy:   settings.Runs,
		runs:        make(map[runKey]*contract.Run),
		tenantRuns:  make(map[string]*tree[int64, *contract.Run]),
		sessionRuns: make(map[runKey]*tree[int64, *contract.Run]),
		kept:        make(map[runKey]*runVersions),
		live:        make(map[int64]*entry),
		queues:      make(map[string]*queue),
		subs:        make(map[string]map[*subscription]struct{}),
	}
	return &Store{
		QueueFront: contract.NewQueueFront(s, s.maxBytes, "memory"),
		StateFront: contract.NewStateFront(s, s.maxBytes, settings.Runs),
		s:          s,
	}
}

// MaxValueBytes returns the size cap for run data and item payloads.
func (st *Store) MaxValueBytes() int { return st.s.maxBytes }

// Policy returns the retry policy the store applies.
func (st *Store) Policy() policy.Policy { return st.s.policy }

// lock takes the store's mutex unless ctx is already done: a cancelled
// call changes nothing.
func (s *store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	return nil
}

// Copies in and out, so callers never alias the bytes and maps held here.

func copyRun(r *contract.Run) *contract.Run {
	c := *r
	c.Data = bytes.Clone(r.Data)
	return &c
}

func copyItem(it contract.Item) contract.Item {
	it.Payload = bytes.Clone(it.Payload)
	it.Metadata = maps.Clone(it.Metadata)
	if it.Waiting != nil {
		w := *it.Waiting
		it.Waiting = &w
	}
	if it.Resumed != nil {
		r := *it.Resumed
		r.Payload = bytes.Clone(r.Payload)
		it.Resumed = &r
	}
	return it
}

// item returns the entry stored under key, or nil.
func (s *store) item(key contract.ItemKey) *entry {
	q := s.queues[key.Queue]
	if q == nil {
		return nil
	}
	tq := q.tenants[key.Tenant]
	if tq == nil {
		return nil
	}
	return tq.items[key.ID]
}

// Cursors are opaque to callers; inside they are the position of the last
// row returned, so a listing resumes after it whatever changed meanwhile.

func seqCursor(seq int64) string { return strconv.FormatInt(seq, 10) }

func parseSeqCursor(c string) (*int64, error) {
	if c == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n < 0 {
		return nil, badCursor()
	}
	return &n, nil
}

func badCursor() error {
	return &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this listing returned; pass \"\" or the Next of the previous page"}
}

func cmpInt64(a, b int64) int { return cmp.Compare(a, b) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
