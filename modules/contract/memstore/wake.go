package memstore

import (
	"time"
)

type subscription struct{ ch chan struct{} }

// Subscribe returns a channel that receives a value when Enqueue, Requeue
// or a retry puts work on the queue, and a func that ends the
// subscription. The channel holds one wake; further wakes are dropped
// until it is read. It is never closed.
func (s *store) Subscribe(name string) (<-chan struct{}, func()) {
	sub := &subscription{ch: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.subs[name]
	if set == nil {
		set = make(map[*subscription]struct{})
		s.subs[name] = set
	}
	set[sub] = struct{}{}
	return sub.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if set := s.subs[name]; set != nil {
			delete(set, sub)
			if len(set) == 0 {
				delete(s.subs, name)
			}
		}
	}
}

// wake signals the queue's subscribers without blocking. The caller holds
// the mutex.
func (s *store) wake(queue string, now time.Time) {
	s.wakes++
	s.lastWake = now
	for sub := range s.subs[queue] {
		select {
		case sub.ch <- struct{}{}:
		default:
		}
	}
}
