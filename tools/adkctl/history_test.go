package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// histQueue is the queue the history tests use, apart from the
// fixture's others.
const histQueue = "hist"

// keep sets the history queue's retention straight on the store.
func (f *fixture) keep(r contract.Retention) {
	f.t.Helper()
	f.must(f.store.SetRetention(f.t.Context(), histQueue, r))
}

// finish enqueues tenant/id on the history queue, claims it as worker w1
// and completes it, the clock moving a second between the steps.
func (f *fixture) finish(tenant, id string) {
	f.t.Helper()
	ctx := f.t.Context()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: tenant, ID: id, Queue: histQueue, Payload: []byte("p")}))
	f.clock.Advance(time.Second)
	ls, err := f.store.Claim(ctx, contract.ClaimRequest{Queue: histQueue, Worker: "w1", LeaseFor: time.Minute, Max: 1})
	f.must(err)
	f.clock.Advance(time.Second)
	f.must(f.store.Complete(ctx, ls...))
}

func TestRetentionShowSet(t *testing.T) {
	f := newFixture(t)
	if out := f.ok("retention", "show", "--queue", histQueue); out != "queue hist: keeps no completed items; records no events\n" {
		t.Errorf("retention show of a fresh queue: %q", out)
	}
	v := f.json(exitOK, "retention", "set", "--queue", histQueue, "--age", "168h", "--events", "5")
	keysOf(t, "retention output", v, "queue", "retention")
	keysOf(t, "the retention", v["retention"], "age", "count", "events")
	if r := v["retention"].(map[string]any); r["age"] != float64(168*time.Hour) || r["count"] != 0.0 || r["events"] != 5.0 {
		t.Errorf("retention set --json: %v", v)
	}
	// The flags not given keep their value.
	out := f.ok("retention", "set", "--queue", histQueue, "--count", "1000")
	if want := "queue hist: keeps finished items for 168h0m0s, at most the latest 1000 (whichever lets go first); records events, the latest 5 per item\n"; out != want {
		t.Errorf("retention set --count:\n got %q\nwant %q", out, want)
	}
	got, err := f.store.Retention(t.Context(), histQueue)
	f.must(err)
	if got != (contract.Retention{Age: 168 * time.Hour, Count: 1000, Events: 5}) {
		t.Errorf("stored retention %+v", got)
	}
	// Refusals change nothing.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set"}, "give at least one of --age, --count and --events"},
		{[]string{"set", "--events", "5000"}, "retention.events"},
		{[]string{"set", "--age", "-1s"}, "retention.age"},
		{[]string{"shw"}, "unknown command"},
	} {
		code, _, errOut := f.run(append([]string{"retention"}, append(c.args, "--queue", histQueue)...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("retention %q: exit %d, stderr %q; want 2 naming %q", c.args, code, errOut, c.want)
		}
	}
	if again, _ := f.store.Retention(t.Context(), histQueue); again != got {
		t.Errorf("a refused set changed the retention to %+v", again)
	}
	f.queue = hidden{f.store}
	if code, _, errOut := f.run("retention", "show"); code != exitFailed || !strings.Contains(errOut, "keeps no history") {
		t.Errorf("retention over a backing without history: exit %d, stderr %q", code, errOut)
	}
}

func TestHistoryVerb(t *testing.T) {
	f := newFixture(t)
	f.keep(contract.Retention{Age: time.Hour, Events: 10})
	ctx := t.Context()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "h1", Queue: histQueue}))
	ls, err := f.store.Claim(ctx, contract.ClaimRequest{Queue: histQueue, Worker: "w1", LeaseFor: time.Minute, Max: 1})
	f.must(err)
	_, err = f.store.Fail(ctx, ls[0], errors.New("model \x1b[31mtimeout"))
	f.must(err)
	f.clock.Advance(time.Hour) // past any backoff
	ls, err = f.store.Claim(ctx, contract.ClaimRequest{Queue: histQueue, Worker: "w2", LeaseFor: time.Minute, Max: 1})
	f.must(err)
	f.clock.Advance(3 * time.Second)
	f.must(f.store.Complete(ctx, ls...))

	v := f.json(exitOK, "history", "--queue", histQueue, "--tenant", "acme", "--id", "h1")
	keysOf(t, "history output", v, "item", "events", "dropped", "heartbeats")
	if it := v["item"].(map[string]any); it["state"] != "completed" || it["finished_at"] == nil {
		t.Errorf("history item: %v", it)
	}
	var kinds []string
	for _, e := range list(t, v, "events") {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	if want := []string{"enqueued", "claimed", "failed", "claimed", "completed"}; !slices.Equal(kinds, want) {
		t.Errorf("event kinds %q, want %q", kinds, want)
	}
	out := f.ok("history", "--queue", histQueue, "--tenant", "acme", "--id", "h1")
	for _, want := range []string{
		"item acme / h1 in queue hist: completed, finished",
		"claimed    worker w1, attempt 1, token",
		`error: model \x1b[31mtimeout`,
		"completed  worker w2, attempt 2, ran 3s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("history output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := f.run("history", "--queue", histQueue, "--tenant", "acme", "--id", "nope"); code != exitNotFound || !strings.Contains(errOut, "no item acme / nope") {
		t.Errorf("history of no item: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := f.run("history", "--queue", histQueue, "--tenant", "acme"); code != exitUsage {
		t.Errorf("history without --id: exit %d, want 2", code)
	}
	// An item of a queue that records no events.
	if out := f.ok("history", "--tenant", "acme", "--id", "a1"); !strings.Contains(out, "queued") || !strings.Contains(out, "no events recorded") {
		t.Errorf("history of an item without events:\n%s", out)
	}
}

func TestFinishedVerb(t *testing.T) {
	f := newFixture(t)
	f.keep(contract.Retention{Age: 24 * time.Hour})
	ctx := t.Context()
	f.finish("acme", "f1")
	f.clock.Advance(time.Hour)
	f.finish("globex", "f2")
	f.clock.Advance(time.Minute)
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "f3", Queue: histQueue}))
	_, err := f.store.Cancel(ctx, contract.ItemKey{Tenant: "acme", Queue: histQueue, ID: "f3"}, "customer asked")
	f.must(err)
	f.clock.Advance(time.Minute)

	ids := func(v map[string]any) []string {
		var out []string
		for _, r := range list(t, v, "finished") {
			out = append(out, r.(map[string]any)["id"].(string))
		}
		return out
	}
	v := f.json(exitOK, "finished", "--queue", histQueue)
	keysOf(t, "finished output", v, "queue", "finished")
	if got := ids(v); !slices.Equal(got, []string{"f3", "f2", "f1"}) {
		t.Errorf("finished, newest first: %q", got)
	}
	keysOf(t, "a finished row", list(t, v, "finished")[0], "tenant", "queue", "id", "state", "finished_at", "enqueued_at", "attempts", "cancel_reason", "payload_bytes")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--state", "completed"}, []string{"f2", "f1"}},
		{[]string{"--state", "cancelled"}, []string{"f3"}},
		{[]string{"--tenant", "acme"}, []string{"f3", "f1"}},
		{[]string{"--id", "f2"}, []string{"f2"}},
		{[]string{"--since", "30m"}, []string{"f3", "f2"}},
		{[]string{"--until", "30m"}, []string{"f1"}},
	} {
		if got := ids(f.json(exitOK, append([]string{"finished", "--queue", histQueue}, c.args...)...)); !slices.Equal(got, c.want) {
			t.Errorf("finished %q: %q, want %q", c.args, got, c.want)
		}
	}
	// Paging: one at a time, forward with next, back with prev.
	p1 := f.json(exitOK, "finished", "--queue", histQueue, "--limit", "1")
	next, _ := p1["next"].(string)
	if got := ids(p1); !slices.Equal(got, []string{"f3"}) || next == "" || p1["prev"] != nil {
		t.Fatalf("first page: %v", p1)
	}
	p2 := f.json(exitOK, "finished", "--queue", histQueue, "--limit", "1", "--cursor", next)
	if got := ids(p2); !slices.Equal(got, []string{"f2"}) || p2["prev"] == nil {
		t.Fatalf("second page: %v", p2)
	}
	if got := ids(f.json(exitOK, "finished", "--queue", histQueue, "--limit", "1", "--cursor", p2["prev"].(string))); !slices.Equal(got, []string{"f3"}) {
		t.Errorf("back with prev: %q", got)
	}
	if got := ids(f.json(exitOK, "finished", "--queue", histQueue, "--limit", "1", "--all")); !slices.Equal(got, []string{"f3", "f2", "f1"}) {
		t.Errorf("--all: %q", got)
	}
	out := f.ok("finished", "--queue", histQueue, "--limit", "2")
	for _, want := range []string{"FINISHED", "cancelled  acme", "reason: customer asked", "completed  globex", "more: add --cursor"} {
		if !strings.Contains(out, want) {
			t.Errorf("finished table lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", "dead"}, "state"},
		{[]string{"--since", "yesterday"}, "--since"},
		{[]string{"--since", "1h", "--until", "2h"}, "until"},
		{[]string{"--limit", "0"}, "--limit"},
		{[]string{"--cursor", "garbage"}, "cursor"},
	} {
		code, _, errOut := f.run(append([]string{"finished", "--queue", histQueue}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("finished %q: exit %d, stderr %q; want 2 naming %q", c.args, code, errOut, c.want)
		}
	}
	if out := f.ok("finished"); !strings.Contains(out, "no finished items match") {
		t.Errorf("finished of a queue that keeps none: %q", out)
	}
}

func TestFindVerb(t *testing.T) {
	f := newFixture(t)
	f.keep(contract.Retention{Count: 10})
	f.finish("acme", "run-1")
	f.must(f.store.Enqueue(t.Context(), contract.Item{Tenant: "globex", ID: "run-1", Queue: histQueue}))
	v := f.json(exitOK, "find", "--queue", histQueue, "--id", "run-1")
	keysOf(t, "find output", v, "queue", "id", "items")
	var got []string
	for _, r := range list(t, v, "items") {
		m := r.(map[string]any)
		got = append(got, m["tenant"].(string)+":"+m["state"].(string))
	}
	if !slices.Equal(got, []string{"acme:completed", "globex:queued"}) {
		t.Errorf("find: %q", got)
	}
	if out := f.ok("find", "--queue", histQueue, "--id", "run-1"); !strings.Contains(out, "acme    completed") || !strings.Contains(out, "globex  queued") {
		t.Errorf("find table:\n%s", out)
	}
	if code, _, errOut := f.run("find", "--queue", histQueue, "--id", "none"); code != exitNotFound || !strings.Contains(errOut, "no item with id none") {
		t.Errorf("find of no item: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := f.run("find", "--queue", histQueue); code != exitUsage {
		t.Errorf("find without --id: exit %d, want 2", code)
	}
}

func TestEventsVerb(t *testing.T) {
	f := newFixture(t)
	f.keep(contract.Retention{Events: 10})
	f.finish("acme", "e1")
	v := f.json(exitOK, "events", "--queue", histQueue)
	keysOf(t, "events output", v, "queue", "events", "next")
	evs := list(t, v, "events")
	if len(evs) != 3 {
		t.Fatalf("events: %v", evs)
	}
	if e := evs[1].(map[string]any); e["kind"] != "claimed" || e["tenant"] != "acme" || e["id"] != "e1" || e["worker"] != "w1" {
		t.Errorf("the claimed event: %v", e)
	}
	next := v["next"].(string)
	if out := f.ok("events", "--queue", histQueue, "--cursor", next); !strings.Contains(out, "no events after this cursor") {
		t.Errorf("events after the last: %q", out)
	}
	out := f.ok("events", "--queue", histQueue, "--limit", "2")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.Contains(lines[0], "enqueued   acme / e1") || !strings.HasPrefix(lines[2], "next: add --cursor ") {
		t.Errorf("events --limit 2:\n%s", out)
	}
	if code, _, errOut := f.run("events", "--queue", histQueue, "--cursor", "x"); code != exitUsage || !strings.Contains(errOut, "cursor") {
		t.Errorf("events with a bad cursor: exit %d, stderr %q", code, errOut)
	}
}

// events --follow reads on after each empty read, waiting --every
// between, printing what came meanwhile, until interrupted (exit 0).
func TestEventsFollow(t *testing.T) {
	f := newFixture(t)
	f.keep(contract.Retention{Events: 10})
	f.finish("acme", "e1")
	var waits []time.Duration
	f.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		switch len(waits) {
		case 1: // new work arrives while the follower waits
			f.finish("globex", "e2")
			return nil
		case 2: // nothing new
			return nil
		}
		return context.Canceled // Ctrl-C
	}
	code, out, errOut := f.run("events", "--queue", histQueue, "--follow", "--every", "250ms", "--json")
	if code != exitOK {
		t.Fatalf("events --follow: exit %d, stderr %q", code, errOut)
	}
	if !slices.Equal(waits, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond}) {
		t.Errorf("waits %v; want one --every after each empty read", waits)
	}
	var seen []string
	for line := range strings.Lines(out) {
		var page eventsOut
		if err := json.Unmarshal([]byte(line), &page); err != nil {
			t.Fatalf("a --follow --json line is no page: %v\n%s", err, line)
		}
		if len(page.Events) == 0 || page.Next == "" {
			t.Errorf("an empty or cursorless page was printed: %s", line)
		}
		for _, e := range page.Events {
			seen = append(seen, fmt.Sprintf("%s/%s %s", e.Tenant, e.ID, e.Kind))
		}
	}
	want := []string{"acme/e1 enqueued", "acme/e1 claimed", "acme/e1 completed", "globex/e2 enqueued", "globex/e2 claimed", "globex/e2 completed"}
	if !slices.Equal(seen, want) {
		t.Errorf("followed events %q, want %q", seen, want)
	}
	if code, _, _ := f.run("events", "--follow", "--every", "0s"); code != exitUsage {
		t.Errorf("--every 0s: exit %d, want 2", code)
	}
}

func TestPruneVerb(t *testing.T) {
	f := newFixture(t)
	f.keep(contract.Retention{Age: time.Hour, Events: 2})
	ctx := t.Context()
	// More than one Prune batch of finished items, and one live item.
	const n = contract.PruneBatch + 5
	items := make([]contract.Item, n)
	for i := range items {
		items[i] = contract.Item{Tenant: "acme", ID: fmt.Sprintf("p%04d", i), Queue: histQueue}
	}
	f.must(f.store.Enqueue(ctx, items...))
	for done := 0; done < n; {
		ls, err := f.store.Claim(ctx, contract.ClaimRequest{Queue: histQueue, Worker: "w1", LeaseFor: time.Minute, Max: contract.MaxClaimBatch})
		f.must(err)
		f.must(f.store.Complete(ctx, ls...))
		done += len(ls)
	}
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "live", Queue: histQueue}))
	if out := f.ok("prune", "--queue", histQueue); out != "queue hist: pruned 0 finished items\n" {
		t.Errorf("prune within the retention: %q", out)
	}
	f.clock.Advance(2 * time.Hour)
	v := f.json(exitOK, "prune", "--queue", histQueue)
	keysOf(t, "prune output", v, "queue", "pruned")
	if v["pruned"] != float64(n) {
		t.Errorf("prune --json: %v; want %d pruned over two batches", v, n)
	}
	if _, err := f.store.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: histQueue, ID: "live"}); err != nil {
		t.Errorf("the live item: %v", err)
	}
	if page, err := f.store.Finished(ctx, contract.FinishedQuery{Queue: histQueue, Page: contract.PageRequest{Limit: 10}}); err != nil || len(page.Items) != 0 {
		t.Errorf("finished items left: %d, %v", len(page.Items), err)
	}
	f.queue = hidden{f.store}
	if code, _, _ := f.run("prune", "--queue", histQueue); code != exitFailed {
		t.Errorf("prune over a backing without history: exit %d, want 1", code)
	}
}
