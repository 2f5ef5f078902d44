package contracttest

import (
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// wakeWait bounds how long a wake may take in real time.
const wakeWait = 5 * time.Second

// queueWakerCases pin the optional Waker: an enqueue wakes a subscriber
// of its queue, and ending the subscription is safe.
func queueWakerCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"EnqueueWakes", testEnqueueWakes},
		{"Unsubscribe", testUnsubscribe},
	}
}

// wakerOf returns q's Waker, or nil when q does not offer the optional
// interface; the Waker points then have nothing to pin and say so in the log.
func wakerOf(t *testing.T, q contract.WorkQueue) contract.Waker {
	t.Helper()
	w, ok := contract.AsWaker(q)
	if !ok {
		t.Logf("%T does not implement the optional contract.Waker: its claimers poll", q)
		return nil
	}
	return w
}

// drainWakes empties ch of wakes already delivered.
func drainWakes(ch <-chan struct{}) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

func testEnqueueWakes(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	w := wakerOf(t, q)
	if w == nil {
		return
	}
	ch, stop := w.Subscribe(contract.DefaultQueue)
	defer stop()
	if ch == nil {
		t.Fatal("Subscribe returned a nil channel")
	}
	drainWakes(ch)
	enqueue(t, q, item("acme", "x"))
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatal("the wake channel closed instead of signalling")
		}
	case <-time.After(wakeWait):
		t.Fatalf("no wake within %v of an enqueue", wakeWait)
	}
	claimOne(t, q, "w")
}

func testUnsubscribe(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	w := wakerOf(t, q)
	if w == nil {
		return
	}
	ch1, stop1 := w.Subscribe(contract.DefaultQueue)
	ch2, stop2 := w.Subscribe(contract.DefaultQueue)
	defer stop2()
	stop1()
	drainWakes(ch1)
	drainWakes(ch2)
	// An ended subscription must not block the enqueue that would wake it.
	done := make(chan error, 1)
	go func() { done <- q.Enqueue(t.Context(), item("acme", "x"), item("acme", "y")) }()
	select {
	case err := <-done:
		mustNoErr(t, err, "Enqueue after an unsubscribe")
	case <-time.After(wakeWait):
		t.Fatalf("Enqueue blocked for %v after a subscriber unsubscribed", wakeWait)
	}
	select {
	case <-ch2:
	case <-time.After(wakeWait):
		t.Fatalf("the remaining subscriber got no wake within %v", wakeWait)
	}
	// The wake reached the live subscriber; give a straggler a moment,
	// then the ended subscription must have received nothing.
	time.Sleep(50 * time.Millisecond)
	select {
	case _, ok := <-ch1:
		if ok {
			t.Error("an ended subscription still received a wake")
		}
	default:
	}
	for range 50 {
		if err := q.Enqueue(t.Context(), item("acme", "x")); err != nil {
			t.Fatalf("Enqueue with a full, unread wake channel: %v", err)
		}
	}
}
