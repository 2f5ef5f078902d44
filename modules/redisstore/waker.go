package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// wakeHub is one pub/sub subscription shared by every subscriber of a
// queue, so a hundred idle workers hold one connection, not a hundred.
type wakeHub struct {
	ps   *redis.PubSub
	done chan struct{}
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Subscribe returns a channel that receives a value when an enqueue, a
// requeue or a retry publishes work for the queue, and a func that ends
// the subscription. The channel holds one wake; further wakes are dropped
// until it is read. A wake is a hint: messages published while the
// subscription reconnects are lost, so claimers must re-poll on a
// safety-net interval (the runner does).
func (q *workQueue) Subscribe(queue string) (<-chan struct{}, func()) {
	name := queue
	ch := make(chan struct{}, 1)
	q.subMu.Lock()
	hub := q.subs[name]
	if hub == nil {
		hub = &wakeHub{done: make(chan struct{}), subs: map[chan struct{}]struct{}{}}
		hub.ps = q.client.Subscribe(context.Background(), wakeChannel(q.settings.Namespace, name))
		// Wait (briefly) for the server to confirm the subscription, so an
		// enqueue made right after Subscribe returns is heard. If the
		// server is away the subscription keeps retrying on its own.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = hub.ps.Receive(ctx)
		cancel()
		q.subs[name] = hub
		go q.forward(hub)
	}
	hub.mu.Lock()
	hub.subs[ch] = struct{}{}
	hub.mu.Unlock()
	q.subMu.Unlock()

	var once sync.Once
	return ch, func() {
		once.Do(func() {
			q.subMu.Lock()
			hub.mu.Lock()
			delete(hub.subs, ch)
			last := len(hub.subs) == 0
			hub.mu.Unlock()
			if last && q.subs[name] == hub {
				delete(q.subs, name)
			}
			q.subMu.Unlock()
			if last {
				_ = hub.ps.Close()
				<-hub.done
			}
		})
	}
}

// forward fans the hub's messages out without blocking on a slow
// subscriber.
func (q *workQueue) forward(hub *wakeHub) {
	defer close(hub.done)
	for range hub.ps.Channel() {
		q.wakes.Add(1)
		q.lastWake.Store(time.Now().UnixNano())
		hub.mu.Lock()
		for ch := range hub.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		hub.mu.Unlock()
	}
}

// Close ends every subscription still open. It does not close the client,
// which belongs to the caller.
func (q *RedisWorkQueue) Close() error { return q.d.close() }

func (q *workQueue) close() error {
	q.subMu.Lock()
	hubs := q.subs
	q.subs = map[string]*wakeHub{}
	q.subMu.Unlock()
	for _, hub := range hubs {
		_ = hub.ps.Close()
		<-hub.done
	}
	return nil
}

// Stats reports the client's pool counters and the wakes received.
// PoolWaits counts acquires that found no idle connection; PoolExhausted
// counts acquires that timed out.
func (q *workQueue) Stats() contract.Stats {
	st := poolStats(q.client)
	st.Wakes = q.wakes.Load()
	if ns := q.lastWake.Load(); ns != 0 {
		st.LastWake = time.Unix(0, ns).UTC()
	}
	return st
}

// Stats reports the client's pool counters.
func (s *RedisStateStore) Stats() contract.Stats { return poolStats(s.d.client) }

func poolStats(c redis.UniversalClient) contract.Stats {
	ps := c.PoolStats()
	if ps == nil {
		return contract.Stats{}
	}
	return contract.Stats{
		PoolAcquires:  int64(ps.Hits) + int64(ps.Misses),
		PoolWaits:     int64(ps.WaitCount),
		PoolExhausted: int64(ps.Timeouts),
	}
}
