package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// wakeHub fans a queue's wakes out to its subscribers. Commits of this
// backing wake them at once; commits of other processes (or of a bound
// transaction) on the file are seen by a watcher that reads PRAGMA
// data_version, which SQLite changes whenever another connection
// commits, every PollInterval while anyone is subscribed.
type wakeHub struct {
	db       *sql.DB
	interval time.Duration
	stats    *counters

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	count   int
	stop    chan struct{}
	stopped chan struct{}
}

func newWakeHub(db *sql.DB, interval time.Duration, stats *counters) *wakeHub {
	return &wakeHub{db: db, interval: interval, stats: stats, subs: map[string]map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a value when Enqueue, Requeue
// or a retry of this queue value puts work on the queue, when SetLimits
// changes its limits or a lease ends of a tenant a claim held back for its
// cap, and
// whenever another process commits to the file (checked every
// PollInterval), and a func that ends the subscription. The channel holds one wake; further
// wakes are dropped until it is read. It is never closed.
func (q *workQueue) Subscribe(queue string) (<-chan struct{}, func()) {
	return q.wakes.subscribe(queue)
}

// wake signals the queue's subscribers without blocking.
func (q *workQueue) wake(queue string) {
	if q.db.bound() {
		return // not committed yet: the watcher sees the commit
	}
	q.wakes.stats.wakes.Add(1)
	q.wakes.stats.lastWake.Store(nanos(q.clock.Now()))
	q.wakes.poke(queue)
}

func (h *wakeHub) subscribe(queue string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.subs[queue]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.subs[queue] = set
	}
	set[ch] = struct{}{}
	h.count++
	if h.count == 1 {
		h.stop, h.stopped = make(chan struct{}), make(chan struct{})
		go h.watch(h.stop, h.stopped)
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs[queue], ch)
			if len(h.subs[queue]) == 0 {
				delete(h.subs, queue)
			}
			h.count--
			var stop, stopped chan struct{}
			if h.count == 0 {
				stop, stopped = h.stop, h.stopped
			}
			h.mu.Unlock()
			if stop != nil {
				close(stop)
				<-stopped
			}
		})
	}
}

func (h *wakeHub) poke(queue string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[queue] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (h *wakeHub) pokeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.subs {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// watch polls the file's data_version on a connection of its own until
// stop closes, and wakes every subscriber when it changes.
func (h *wakeHub) watch(stop, stopped chan struct{}) {
	defer close(stopped)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	last := int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if conn == nil {
			c, err := h.db.Conn(ctx)
			if err != nil {
				continue
			}
			conn = c
			last = -1
		}
		var v int64
		if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
			conn.Close()
			conn = nil
			continue
		}
		if last >= 0 && v != last {
			h.pokeAll()
		}
		last = v
	}
}
