package contracttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// timeSlack is how far a stored time may sit from the clock reading it was
// taken from: backings may keep microseconds (PostgreSQL) or milliseconds.
const timeSlack = time.Millisecond

// lease is the lease length the suites claim with unless a case needs
// another: long enough that no case expires a lease by accident.
const lease = 30 * time.Second

// testPolicy is the policy the queue cases use unless they pin another:
// a few attempts and jitter pinned to the full backoff, so due times are
// exact.
func testPolicy() policy.Policy {
	return policy.Policy{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: policy.Fixed(1)}
}

// newState calls the factory with a fresh clock and the zero RunPolicy.
func newState(t *testing.T, f StateFactory) (contract.StateStore, *FakeClock) {
	t.Helper()
	return newStatePolicy(t, f, contract.RunPolicy{})
}

// newStatePolicy calls the factory with a fresh clock and policy p.
func newStatePolicy(t *testing.T, f StateFactory, p contract.RunPolicy) (contract.StateStore, *FakeClock) {
	t.Helper()
	clock := NewFakeClock(FakeEpoch)
	s := f(t, clock, p)
	if s == nil {
		t.Fatal("StateFactory returned a nil StateStore")
	}
	return s, clock
}

// newQueue calls the factory with a fresh clock and the given policy.
func newQueue(t *testing.T, f QueueFactory, p policy.Policy) (contract.WorkQueue, *FakeClock) {
	t.Helper()
	clock := NewFakeClock(FakeEpoch)
	q := f(t, clock, p)
	if q == nil {
		t.Fatal("QueueFactory returned a nil WorkQueue")
	}
	return q, clock
}

// inspectorOf returns the queue's Inspector, failing the test when the
// backing does not implement it (every backing must).
func inspectorOf(t *testing.T, q contract.WorkQueue) contract.Inspector {
	t.Helper()
	ins, ok := contract.AsInspector(q)
	if !ok {
		t.Fatalf("%T does not implement contract.Inspector; every backing must", q)
	}
	return ins
}

// sameTime fails unless got is want within timeSlack.
func sameTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -timeSlack || d > timeSlack {
		t.Errorf("%s = %v, want %v (the injected clock's reading; off by %v)", what, got.UTC(), want.UTC(), d)
	}
}

// mustNoErr fails the test at once on err.
func mustNoErr(t *testing.T, err error, format string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", fmt.Sprintf(format, args...), err)
	}
}

// wantIs fails unless errors.Is(err, target).
func wantIs(t *testing.T, err, target error, format string, args ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v (%T), want one matching %v", fmt.Sprintf(format, args...), err, err, target)
	}
}

// wantInvalid fails unless err matches contract.ErrInvalid and is a
// *contract.ValidationError.
func wantInvalid(t *testing.T, err error, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("%s: got error %v (%T), want one matching contract.ErrInvalid", what, err, err)
		return
	}
	var ve *contract.ValidationError
	if !errors.As(err, &ve) {
		t.Errorf("%s: error %v matches ErrInvalid but is not a *contract.ValidationError", what, err)
	}
}

// wantTooLarge fails unless err is a non-retryable too_large
// *contract.StatePersistenceError.
func wantTooLarge(t *testing.T, err error, what string) {
	t.Helper()
	var pe *contract.StatePersistenceError
	if !errors.As(err, &pe) {
		t.Errorf("%s: got error %v (%T), want *contract.StatePersistenceError", what, err, err)
		return
	}
	if pe.Reason != contract.ReasonTooLarge {
		t.Errorf("%s: Reason = %q, want %q", what, pe.Reason, contract.ReasonTooLarge)
	}
	if pe.Retryable() || contract.Retryable(err) {
		t.Errorf("%s: a too_large error says it is retryable; it never is", what)
	}
}

// wantConflict fails unless err is a *contract.StateConflictError with the
// given numbers.
func wantConflict(t *testing.T, err error, expected, actual int64, what string) {
	t.Helper()
	var ce *contract.StateConflictError
	if !errors.As(err, &ce) {
		t.Errorf("%s: got error %v (%T), want *contract.StateConflictError", what, err, err)
		return
	}
	if ce.Expected != expected || ce.Actual != actual {
		t.Errorf("%s: conflict Expected=%d Actual=%d, want Expected=%d Actual=%d", what, ce.Expected, ce.Actual, expected, actual)
	}
}

// wantLeaseLost fails unless err is a *contract.LeaseLostError naming
// exactly the given items.
func wantLeaseLost(t *testing.T, err error, what string, keys ...contract.ItemKey) {
	t.Helper()
	var ll *contract.LeaseLostError
	if !errors.As(err, &ll) {
		t.Errorf("%s: got error %v (%T), want *contract.LeaseLostError", what, err, err)
		return
	}
	got := map[contract.ItemKey]int{}
	for _, k := range ll.Items {
		got[normKey(k)]++
	}
	want := map[contract.ItemKey]int{}
	for _, k := range keys {
		want[normKey(k)]++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: LeaseLostError names %v, want %v", what, ll.Items, keys)
	}
}

func normKey(k contract.ItemKey) contract.ItemKey {
	k.Queue = contract.QueueName(k.Queue)
	return k
}

// sameJSON fails unless got and want are the same JSON document (backings
// may reformat it: PostgreSQL jsonb reorders keys and drops whitespace).
// Empty stands for null.
func sameJSON(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	if !jsonEqual(got, want) {
		t.Errorf("%s = %s, want %s", what, clip(got), clip(want))
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if len(a) == 0 {
		a = json.RawMessage("null")
	}
	if len(b) == 0 {
		b = json.RawMessage("null")
	}
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// clip shortens a value for a failure message.
func clip(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%q... (%d bytes)", b[:80], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// sameMetadata fails unless got holds exactly want (nil and empty alike).
func sameMetadata(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: Metadata = %v, want %v", what, got, want)
	}
}

// item builds an item of the default queue.
func item(tenant, id string) contract.Item {
	return contract.Item{Tenant: tenant, ID: id, Payload: []byte("payload of " + id)}
}

// items builds n items of one tenant, ids prefix-000...
func items(tenant, prefix string, n int) []contract.Item {
	out := make([]contract.Item, n)
	for i := range out {
		out[i] = item(tenant, fmt.Sprintf("%s-%04d", prefix, i))
	}
	return out
}

// enqueue adds items in batches of at most 100 and fails the test on error.
func enqueue(t *testing.T, q contract.WorkQueue, its ...contract.Item) {
	t.Helper()
	for len(its) > 0 {
		n := min(len(its), 100)
		mustNoErr(t, q.Enqueue(t.Context(), its[:n]...), "Enqueue of %d items", n)
		its = its[n:]
	}
}

// claimReq is a claim of the default queue.
func claimReq(worker string, max int) contract.ClaimRequest {
	return contract.ClaimRequest{Worker: worker, LeaseFor: lease, Max: max}
}

// claimOne claims exactly one item of the default queue.
func claimOne(t *testing.T, q contract.WorkQueue, worker string) contract.Lease {
	t.Helper()
	ls, err := q.Claim(t.Context(), claimReq(worker, 1))
	mustNoErr(t, err, "Claim(Max 1)")
	if len(ls) != 1 {
		t.Fatalf("Claim(Max 1) returned %d leases, want 1", len(ls))
	}
	return ls[0]
}

// wantEmpty fails unless a claim of the queue finds nothing due.
func wantEmpty(t *testing.T, q contract.WorkQueue, queue, what string) {
	t.Helper()
	ls, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: queue, Worker: "probe", LeaseFor: lease, Max: maxProbe})
	if !errors.Is(err, contract.ErrEmpty) {
		t.Errorf("%s: Claim got %d leases (%v) and error %v, want ErrEmpty", what, len(ls), leaseIDs(ls), err)
	}
}

// maxProbe is the batch a probing claim asks for: enough to see everything
// the cases enqueue at once.
const maxProbe = contract.MaxClaimBatch

// drain claims everything due in the queue, Max at a time, until ErrEmpty.
func drain(t *testing.T, q contract.WorkQueue, queue, worker string, max int) []contract.Lease {
	t.Helper()
	var out []contract.Lease
	for range 100000 {
		ls, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: queue, Worker: worker, LeaseFor: lease, Max: max})
		if errors.Is(err, contract.ErrEmpty) {
			return out
		}
		mustNoErr(t, err, "Claim while draining")
		if len(ls) == 0 || len(ls) > max {
			t.Fatalf("Claim(Max %d) returned %d leases and no error", max, len(ls))
		}
		out = append(out, ls...)
	}
	t.Fatal("draining the queue never reached ErrEmpty")
	return nil
}

func leaseIDs(ls []contract.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Item.Tenant + "/" + l.Item.ID
	}
	return out
}

// deadLetters returns every dead letter matching f, paging by 1000.
func deadLetters(t *testing.T, q contract.WorkQueue, f contract.DeadLetterFilter) []contract.Item {
	t.Helper()
	var out []contract.Item
	cursor := ""
	for range 1000 {
		p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{DeadLetterFilter: f, Page: contract.PageRequest{Cursor: cursor, Limit: contract.MaxPageSize}})
		mustNoErr(t, err, "DeadLetters(%+v)", f)
		out = append(out, p.Items...)
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
	t.Fatal("DeadLetters paging never ended")
	return nil
}

// itemState reports the item's state through the Inspector when the queue
// has one ("" and ok=false otherwise; "gone" when not found).
func itemState(t *testing.T, q contract.WorkQueue, key contract.ItemKey) (contract.ItemInfo, string, bool) {
	t.Helper()
	ins, ok := contract.AsInspector(q)
	if !ok {
		return contract.ItemInfo{}, "", false
	}
	info, err := ins.Item(t.Context(), key)
	if errors.Is(err, contract.ErrNotFound) {
		return info, "gone", true
	}
	mustNoErr(t, err, "Inspector.Item(%v)", key)
	return info, string(info.Item.State), true
}

// wantItemState checks the item's state through the Inspector when the
// queue has one; other checks in the same case cover backings without.
func wantItemState(t *testing.T, q contract.WorkQueue, key contract.ItemKey, want string, what string) {
	t.Helper()
	if _, got, ok := itemState(t, q, key); ok && got != want {
		t.Errorf("%s: Inspector.Item(%s/%s) state = %q, want %q", what, key.Tenant, key.ID, got, want)
	}
}

// cancelled returns a context that is already cancelled.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// contains reports whether s contains any of subs, ignoring case.
func containsAny(s string, subs ...string) bool {
	s = strings.ToLower(s)
	for _, sub := range subs {
		if strings.Contains(s, strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

// subtest is one named case of a suite.
type subtest[F any] struct {
	name string
	run  func(t *testing.T, f F)
}

// runGroup runs the cases of one area as subtests of a subtest.
func runGroup[F any](t *testing.T, f F, group string, cases []subtest[F]) {
	t.Helper()
	t.Run(group, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, f) })
		}
	})
}
