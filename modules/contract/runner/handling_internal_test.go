package runner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

type valueKey struct{}

// A handler's context answers as the cancel context it stands for does,
// whether that context was made before the cancel, after it, or never.
func TestHandlingContext(t *testing.T) {
	if cancelCtxKey == nil {
		t.Fatal("the context package's cancel key was not learned: every handler's context would make its cancel context at the first Value")
	}
	lease := contract.Lease{Item: contract.Item{Queue: "q", Tenant: "t", ID: "1"}, Token: 7}
	gone := &contract.LeaseLostError{Items: []contract.ItemKey{{Queue: "q", Tenant: "t", ID: "1"}}}
	newParent := func(t *testing.T) (context.Context, context.CancelCauseFunc) {
		parent, stop := context.WithCancelCause(context.WithValue(context.Background(), valueKey{}, "v"))
		t.Cleanup(func() { stop(nil) })
		return parent, stop
	}

	t.Run("running", func(t *testing.T) {
		parent, _ := newParent(t)
		h := newHandling(parent, nil, lease)
		if h.Err() != nil || context.Cause(h) != nil {
			t.Fatalf("Err %v, Cause %v before any cancel", h.Err(), context.Cause(h))
		}
		if h.Value(valueKey{}) != "v" || handlingOf(h) != h {
			t.Fatalf("values: %v, %p", h.Value(valueKey{}), handlingOf(h))
		}
		if tok, ok := Fence(h); !ok || tok != 7 {
			t.Fatalf("Fence = %d, %v", tok, ok)
		}
		if _, ok := h.Deadline(); ok {
			t.Fatal("a deadline the parent does not have")
		}
		if got := fmt.Sprint(h); got != "runner.handlerContext" {
			t.Fatalf("printed as %q", got)
		}
	})

	t.Run("ended before anything asked", func(t *testing.T) {
		parent, _ := newParent(t)
		h := newHandling(parent, nil, lease)
		if h.made.Load() != nil {
			t.Fatal("the cancel context was made before anyone asked for it")
		}
		h.end(gone)
		h.end(nil) // a second cause does not replace the first
		if h.made.Load() != nil {
			t.Fatal("end made the cancel context")
		}
		if !errors.Is(h.Err(), context.Canceled) {
			t.Fatalf("Err = %v", h.Err())
		}
		if c := context.Cause(h); c != gone {
			t.Fatalf("Cause = %v, want the lost lease", c)
		}
		select {
		case <-h.Done():
		default:
			t.Fatal("Done not closed after the end")
		}
	})

	t.Run("ended after Done", func(t *testing.T) {
		parent, _ := newParent(t)
		h := newHandling(parent, nil, lease)
		done := h.Done()
		child, cancelChild := context.WithTimeout(h, time.Hour)
		defer cancelChild()
		h.end(gone)
		<-done
		<-child.Done()
		if c := context.Cause(h); c != gone {
			t.Fatalf("Cause = %v", c)
		}
		if c := context.Cause(child); c != gone {
			t.Fatalf("a derived context's Cause = %v", c)
		}
	})

	t.Run("returned", func(t *testing.T) {
		parent, _ := newParent(t)
		h := newHandling(parent, nil, lease)
		h.end(nil)
		if !errors.Is(h.Err(), context.Canceled) || !errors.Is(context.Cause(h), context.Canceled) {
			t.Fatalf("Err %v, Cause %v after the handler returned", h.Err(), context.Cause(h))
		}
	})

	t.Run("runner stops", func(t *testing.T) {
		parent, stop := newParent(t)
		stopped := errors.New("stopping")
		early := newHandling(parent, nil, lease)
		waiting := newHandling(parent, nil, lease)
		done := waiting.Done()
		stop(stopped)
		<-done
		if !errors.Is(early.Err(), context.Canceled) || context.Cause(early) != stopped {
			t.Fatalf("unmade: Err %v, Cause %v", early.Err(), context.Cause(early))
		}
		if context.Cause(waiting) != stopped {
			t.Fatalf("made: Cause %v", context.Cause(waiting))
		}
		early.end(gone) // too late: the runner's cause came first
		if context.Cause(early) != stopped {
			t.Fatalf("Cause after a later end: %v", context.Cause(early))
		}
	})
}

// causeNow says what context.Cause would, without making the cancel
// context of a handler that never asked for it.
func TestHandlingCauseNow(t *testing.T) {
	lease := contract.Lease{Item: contract.Item{Queue: "q", Tenant: "t", ID: "1"}, Token: 7}
	stopped := errors.New("stopped")
	gone := &contract.CancelledError{}
	for _, tc := range []struct {
		name  string
		setup func(h *handling, stop context.CancelCauseFunc)
		want  error
		made  bool
	}{
		{"running", func(*handling, context.CancelCauseFunc) {}, nil, false},
		{"parent stopped", func(_ *handling, stop context.CancelCauseFunc) { stop(stopped) }, stopped, false},
		{"ended with a cause", func(h *handling, _ context.CancelCauseFunc) { h.end(gone) }, gone, false},
		{"made, then parent stopped", func(h *handling, stop context.CancelCauseFunc) { h.ctx(); stop(stopped) }, stopped, true},
		{"made, then ended", func(h *handling, _ context.CancelCauseFunc) { h.ctx(); h.end(gone) }, gone, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			h := newHandling(parent, nil, lease)
			tc.setup(h, stop)
			if got := h.causeNow(); got != tc.want {
				t.Fatalf("causeNow = %v; want %v", got, tc.want)
			}
			if made := h.made.Load() != nil; made != tc.made {
				t.Fatalf("cancel context made: %v; want %v", made, tc.made)
			}
			if got := context.Cause(h); got != tc.want {
				t.Fatalf("context.Cause = %v; want %v (causeNow must agree)", got, tc.want)
			}
		})
	}
}
