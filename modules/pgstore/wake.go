package pgstore

import (
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Subscribe returns a channel that receives a value when work may be ready
// on the queue, and a func that ends the subscription. With a Listener in
// the settings the wakes are the queue's NOTIFYs (sent by Enqueue,
// Requeue and retries, on commit) plus the listener's synthetic wake after
// a reconnect. Without one it falls back to polling: the channel ticks
// every PollInterval. Either way the channel holds one wake and drops the
// rest until it is read; claimers re-poll on their own interval as well.
func (q *PostgresWorkQueue) Subscribe(queue string) (<-chan struct{}, func()) {
	name := contract.QueueName(queue)
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
		return ch, cancel
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
