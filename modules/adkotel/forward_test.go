package adkotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/adkit/adk/modules/adkotel"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Queues that have some of the optional interfaces, built from a memstore.
type (
	plainQ struct{ contract.WorkQueue }
	insQ   struct {
		contract.WorkQueue
		contract.Inspector
	}
	wakeQ struct {
		contract.WorkQueue
		contract.Waker
	}
	statsQ struct {
		contract.WorkQueue
		contract.StatsSource
	}
	insWakeQ struct {
		contract.WorkQueue
		contract.Inspector
		contract.Waker
	}
	insStatsQ struct {
		contract.WorkQueue
		contract.Inspector
		contract.StatsSource
	}
	wakeStatsQ struct {
		contract.WorkQueue
		contract.Waker
		contract.StatsSource
	}
)

// The wrapper reports the capabilities of the queue it wraps, whichever
// combination that has, and its forwarded methods reach it.
func TestWrapQueueForwardsOptionalInterfaces(t *testing.T) {
	s := memstore.New(nil, memstore.Settings{})
	cases := []struct {
		name                  string
		q                     contract.WorkQueue
		inspector, waker, src bool
	}{
		{"none", plainQ{s}, false, false, false},
		{"inspector", insQ{s, s}, true, false, false},
		{"waker", wakeQ{s, s}, false, true, false},
		{"stats", statsQ{s, s}, false, false, true},
		{"inspector+waker", insWakeQ{s, s, s}, true, true, false},
		{"inspector+stats", insStatsQ{s, s, s}, true, false, true},
		{"waker+stats", wakeStatsQ{s, s, s}, false, true, true},
		{"all", s, true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, defaultPolicy)
			w := adkotel.WrapQueue(c.q, r.opts...)
			_, ins := contract.AsInspector(w)
			_, wk := contract.AsWaker(w)
			_, st := contract.AsStatsSource(w)
			if ins != c.inspector || wk != c.waker || st != c.src {
				t.Errorf("wrapped: inspector %v waker %v stats %v; want %v %v %v", ins, wk, st, c.inspector, c.waker, c.src)
			}
			u, ok := w.(interface{ Unwrap() contract.WorkQueue })
			if !ok || u.Unwrap() != c.q {
				t.Errorf("Unwrap does not return the wrapped queue")
			}
			// The forwarded methods reach the inner queue.
			if i, ok := contract.AsInspector(w); ok {
				if h, err := i.Health(context.Background()); err != nil || h.Backing != "memory" {
					t.Errorf("Health through the wrapper: %v %v", h, err)
				}
			}
			if k, ok := contract.AsWaker(w); ok {
				_, stop := k.Subscribe("q")
				stop()
			}
		})
	}
}

// unwrapQ is a wrapper that says what it wraps.
type unwrapQ struct {
	contract.WorkQueue
	inner contract.WorkQueue
}

func (u unwrapQ) Unwrap() contract.WorkQueue { return u.inner }

// failingHealth is an Inspector whose Health fails, so the system cannot
// be learned from it.
type failingHealth struct{ contract.Inspector }

func (failingHealth) Health(context.Context) (contract.Health, error) {
	return contract.Health{}, errors.New("down")
}

var defaultPolicy = policy.Policy{}

func TestSystemDetection(t *testing.T) {
	s := memstore.New(nil, memstore.Settings{})
	for _, c := range []struct {
		name string
		q    contract.WorkQueue
		want string
	}{
		{"no inspector", plainQ{s}, adkotel.SystemADK},
		{"health fails", insQ{s, failingHealth{s}}, adkotel.SystemADK},
		{"known backing", s, adkotel.SystemMemory},
		{"health says memory", insQ{s, s}, adkotel.SystemMemory},
		{"unwraps to a known backing", unwrapQ{plainQ{s}, s}, adkotel.SystemMemory},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, defaultPolicy)
			w := adkotel.WrapQueue(c.q, r.opts...)
			if err := w.Enqueue(context.Background(), contract.Item{Tenant: "a", ID: c.name}); err != nil {
				t.Fatal(err)
			}
			wantAttrs(t, r.one(t, "send default"), semconv.MessagingSystemKey.String(c.want))
		})
	}
}

func TestWrapNilPanics(t *testing.T) {
	for name, wrap := range map[string]func(){
		"queue": func() { adkotel.WrapQueue(nil) },
		"state": func() { adkotel.WrapState(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil {
					t.Errorf("wrapping nil did not panic")
				}
			}()
			wrap()
		})
	}
}
