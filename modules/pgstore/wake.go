package pgstore

import (
	"context"
	"sync"
	"time"
)

// Subscribe returns a channel that receives a value when work may be ready
// on the queue, and a func that ends the subscription. With a Listener in
// the settings the wakes are the queue's NOTIFYs (sent by Enqueue,
// Requeue and retries, on commit) plus the listener's synthetic wake after
// a reconnect, and one wake once a channel the listener did not LISTEN yet
// is in place. Without one it falls back to polling: the channel ticks
// every PollInterval. Either way the channel holds one wake and drops the
// rest until it is read; claimers re-poll on their own interval as well.
func (q *workQueue) Subscribe(queue string) (<-chan struct{}, func()) {
	name := queue
	ch := make(chan struct{}, 1)
	poke := func() bool {
		select {
		case ch <- struct{}{}:
			return true
		default:
			return false
		}
	}
	if l := q.settings.Listener; l != nil {
		cancel := l.subscribe(q.channel, func(n Notification) bool {
			if n.Synthetic || n.Payload == name {
				poke() // a full channel already holds a wake: nothing is lost
			}
			return true
		})
		if l.listens(q.channel) {
			return ch, cancel
		}
		// The listener LISTENs a new channel in the background; what is
		// notified before that is lost, like what is sent while it
		// reconnects, so the subscriber gets one wake once it is in place.
		ctx, stopWait := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if l.Listen(ctx, q.channel) == nil {
				poke()
			}
		}()
		var once sync.Once
		return ch, func() {
			once.Do(func() {
				stopWait()
				<-done
				cancel()
			})
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(q.settings.PollInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				poke()
			}
		}
	}()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			close(stop)
			<-done
		})
	}
}
