package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// hidden is a WorkQueue with nothing but the interface: a backing
// without lifecycle controls.
type hidden struct{ contract.WorkQueue }

// claimAll claims every due item of queue and returns the leases by id.
func (f *fixture) claimAll(queue string) map[string]contract.Lease {
	f.t.Helper()
	ls, err := f.store.Claim(f.t.Context(), contract.ClaimRequest{Queue: queue, Worker: "w9", LeaseFor: time.Hour, Max: 100})
	if !errors.Is(err, contract.ErrEmpty) {
		f.must(err)
	}
	out := map[string]contract.Lease{}
	for _, l := range ls {
		out[l.Item.ID] = l
	}
	return out
}

func (f *fixture) state(tenant, id string) contract.Item {
	f.t.Helper()
	info, err := f.store.Item(f.t.Context(), contract.ItemKey{Tenant: tenant, Queue: contract.DefaultQueue, ID: id})
	f.must(err)
	return info.Item
}

func TestPauseResume(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if out := f.ok("paused"); !strings.Contains(out, "queue default: not paused") || !strings.Contains(out, "no tenant paused") {
		t.Errorf("paused before any pause:\n%s", out)
	}
	v := f.json(exitOK, "pause")
	keysOf(t, "pause output", v, "action", "queue", "tenant", "state")
	keysOf(t, "the pause state", v["state"], "queue", "paused", "tenants")
	if st := v["state"].(map[string]any); st["paused"] != true || len(st["tenants"].([]any)) != 0 {
		t.Errorf("pause --json: %v", v)
	}
	// A paused queue hands out nothing.
	if ls := f.claimAll(""); len(ls) != 0 {
		t.Fatalf("a paused queue gave %d leases", len(ls))
	}
	if out := f.ok("pause", "--tenant", "acme"); out != "tenant acme in queue default paused\n" {
		t.Errorf("pause --tenant: %q", out)
	}
	if out := f.ok("tenants"); !strings.Contains(out, "the queue is PAUSED") || !strings.Contains(out, "PAUSED\n") {
		t.Errorf("tenants of a paused queue:\n%s", out)
	}
	out := f.ok("resume")
	if !strings.Contains(out, "queue default resumed") || !strings.Contains(out, "still paused: acme (adkctl resume --queue default --tenant NAME)") {
		t.Errorf("resume of the queue: %q", out)
	}
	v = f.json(exitOK, "paused")
	keysOf(t, "paused output", v, "queue", "paused", "tenants")
	if v["paused"] != false || !slices.Equal(v["tenants"].([]any), []any{"acme"}) {
		t.Errorf("paused --json: %v", v)
	}
	if out := f.ok("paused"); !strings.Contains(out, "paused tenants (1): acme") {
		t.Errorf("paused:\n%s", out)
	}
	// acme is passed over; globex's delayed item is not due: nothing.
	if ls := f.claimAll(""); len(ls) != 0 {
		t.Fatalf("a paused tenant's items were claimed: %v", ls)
	}
	ts := list(t, f.json(exitOK, "tenants"), "tenants")
	if a := ts[0].(map[string]any); a["tenant"] != "acme" || a["paused"] != true || a["position"] != 1.0 {
		t.Errorf("a paused tenant keeps its place and is marked: %v", a)
	}
	f.ok("resume", "--tenant", "acme")
	if ls := f.claimAll(""); len(ls) != 3 {
		t.Errorf("after resume: %d leases, want acme's 3", len(ls))
	}
	st, err := f.store.Paused(ctx, "")
	f.must(err)
	if st.Paused || len(st.Tenants) != 0 {
		t.Errorf("after both resumes: %+v", st)
	}

	if code, _, errOut := f.run("pause", "--tenant", "a\x00b"); code != exitUsage || !strings.Contains(errOut, "NUL") {
		t.Errorf("a NUL tenant: exit %d %q", code, errOut)
	}
	f.queue = hidden{f.store}
	for _, args := range [][]string{{"pause"}, {"paused"}, {"cancel", "--tenant", "acme", "--id", "a1"}, {"waiting"}, {"purge-cancelled", "--older-than", "0"}} {
		if code, _, errOut := f.run(args...); code != exitFailed || !strings.Contains(errOut, "has no lifecycle controls") {
			t.Errorf("adkctl %q on a backing without lifecycle controls: exit %d %q", args, code, errOut)
		}
	}
	// tenants still works there, with no pause to show.
	if v := f.json(exitOK, "tenants"); v["paused"] != false {
		t.Errorf("tenants without lifecycle controls: %v", v)
	}
}

func TestCancelOne(t *testing.T) {
	f := newFixture(t)
	if out := f.ok("cancel", "--tenant", "acme", "--id", "a1", "--reason", "customer asked"); out != "item acme / a1 in queue default was queued: cancelled\n" {
		t.Errorf("cancel of a queued item: %q", out)
	}
	if it := f.state("acme", "a1"); it.State != contract.StateCancelled || it.CancelReason != "customer asked" || !it.CancelledAt.Equal(f.clock.Now()) {
		t.Errorf("a1 after cancel: %+v", it)
	}
	out := f.ok("item", "--tenant", "acme", "--id", "a1")
	for _, want := range []string{"cancelled", "0s ago: customer asked"} {
		if !strings.Contains(out, want) {
			t.Errorf("item of a cancelled item lacks %q:\n%s", want, out)
		}
	}
	v := f.json(exitOK, "item", "--tenant", "acme", "--id", "a1")
	if v["state"] != "cancelled" || v["cancel_reason"] != "customer asked" || v["cancelled_at"] == nil || v["cancel_pending"] != nil {
		t.Errorf("item --json of a cancelled item: %v", v)
	}
	if out := f.ok("cancel", "--tenant", "acme", "--id", "a1"); !strings.Contains(out, "was already cancelled; nothing changed") {
		t.Errorf("a second cancel: %q", out)
	}
	// A delayed item, and a dead letter.
	if out := f.ok("cancel", "--tenant", "globex", "--id", "g2"); !strings.Contains(out, "was queued: cancelled") {
		t.Errorf("cancel of a delayed item: %q", out)
	}
	v = f.json(exitOK, "cancel", "--tenant", "initech", "--id", "d3")
	keysOf(t, "cancel output", v, "action", "scope", "tenant", "queue", "id", "was", "pending")
	if v["was"] != "dead" || v["pending"] != false || v["scope"] != "one" {
		t.Errorf("cancel of a dead letter: %v", v)
	}

	// A leased item is marked: the holder's next call cancels it.
	out = f.ok("cancel", "--tenant", "globex", "--id", "g1", "--reason", "stop")
	if !strings.Contains(out, "was leased: cancel pending until the holder's next call") {
		t.Errorf("cancel of a leased item: %q", out)
	}
	if v := f.json(exitOK, "cancel", "--tenant", "globex", "--id", "g1"); v["was"] != "leased" || v["pending"] != true {
		t.Errorf("a second cancel of a marked lease: %v", v)
	}
	it := f.state("globex", "g1")
	if it.State != contract.StateLeased || it.CancelReason != "stop" {
		t.Errorf("a marked lease: %+v (the first mark is kept)", it)
	}
	out = f.ok("item", "--tenant", "globex", "--id", "g1")
	for _, want := range []string{"leased, CANCEL PENDING until the holder's next call", "cancel asked", ": stop", "worker worker-7"} {
		if !strings.Contains(out, want) {
			t.Errorf("item of a marked lease lacks %q:\n%s", want, out)
		}
	}
	if v := f.json(exitOK, "item", "--tenant", "globex", "--id", "g1"); v["cancel_pending"] != true || v["lease"] == nil {
		t.Errorf("item --json of a marked lease: %v", v)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cancel", "--tenant", "acme", "--id", "gone"}, exitNotFound, "no item acme / gone in queue default"},
		{[]string{"cancel", "--tenant", "acme"}, exitUsage, "give both --tenant and --id"},
		{[]string{"cancel", "--tenant", "acme", "--id", "a2", "--reason", strings.Repeat("x", 1025)}, exitUsage, "reason: is 1025 bytes"},
		{[]string{"cancel", "--tenant", "acme", "--id", "a2", "--state", "queued"}, exitUsage, "--state goes with --match"},
		{[]string{"cancel", "--tenant", "acme", "--id", "a2", "--yes"}, exitUsage, "--yes goes with --match"},
		{[]string{"cancel", "--tenant", "acme", "--id", "a2", "--dry-run"}, exitUsage, "--dry-run goes with --match"},
	} {
		code, _, errOut := f.run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %q: exit %d %q; want exit %d naming %q", cut(strings.Join(tc.args, " "), 80), code, errOut, tc.code, tc.want)
		}
	}
	if it := f.state("acme", "a2"); it.State != contract.StateQueued {
		t.Errorf("a refused cancel changed a2: %+v", it)
	}
}

func TestCancelMatch(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "eval-1"}, contract.Item{Tenant: "acme", ID: "eval-2"}, contract.Item{Tenant: "globex", ID: "eval-3"}))
	count := func(fl contract.CancelFilter) int {
		t.Helper()
		n, err := f.store.CountMatching(ctx, fl)
		f.must(err)
		return n
	}
	acme := contract.CancelFilter{Tenant: "acme"}
	if n := count(acme); n != 5 {
		t.Fatalf("CountMatching acme = %d, want 5", n)
	}
	// --dry-run: the count, exit 0, nothing changed.
	out := f.ok("cancel", "--match", "--tenant", "acme", "--dry-run")
	if out != "5 items match --queue default --tenant acme\n" {
		t.Errorf("dry run: %q", out)
	}
	v := f.json(exitOK, "cancel", "--match", "--tenant", "acme", "--id-prefix", "eval-", "--dry-run")
	keysOf(t, "cancel --match output", v, "action", "scope", "filter", "matched", "count", "dry_run", "applied")
	keysOf(t, "the filter", v["filter"], "queue", "tenant", "id_prefix")
	if v["matched"] != 2.0 || v["applied"] != false || v["dry_run"] != true || v["count"] != 0.0 {
		t.Errorf("dry run --json: %v", v)
	}
	// Without --yes: the count, exit 1, nothing changed.
	code, out, errOut := f.run("cancel", "--match", "--tenant", "acme")
	if code != exitFailed || out != "5 items match --queue default --tenant acme\n" ||
		!strings.Contains(errOut, "nothing changed: a bulk cancel needs --yes; rerun with --yes to cancel the 5 items") {
		t.Errorf("bulk cancel without --yes: exit %d %q %q", code, out, errOut)
	}
	if v := f.json(exitFailed, "cancel", "--match", "--tenant", "acme"); v["applied"] != false || v["matched"] != 5.0 {
		t.Errorf("bulk cancel without --yes --json: %v", v)
	}
	if n := count(acme); n != 5 {
		t.Fatalf("a refused bulk cancel changed something: %d match now", n)
	}
	// With --yes: exactly the filter.
	out = f.ok("cancel", "--match", "--tenant", "acme", "--id-prefix", "eval-", "--reason", "bad prompt", "--yes")
	if !strings.Contains(out, "2 items match --queue default --tenant acme --id-prefix eval-; cancelling them") || !strings.Contains(out, "cancelled 2 items") {
		t.Errorf("bulk cancel --yes: %q", out)
	}
	for id, want := range map[string]contract.ItemState{"eval-1": contract.StateCancelled, "eval-2": contract.StateCancelled, "a1": contract.StateQueued} {
		if it := f.state("acme", id); it.State != want {
			t.Errorf("acme/%s is %s, want %s", id, it.State, want)
		}
	}
	if it := f.state("acme", "eval-1"); it.CancelReason != "bad prompt" {
		t.Errorf("the reason: %q", it.CancelReason)
	}
	if it := f.state("globex", "eval-3"); it.State != contract.StateQueued {
		t.Errorf("a bulk cancel for acme touched globex/eval-3: %+v", it)
	}
	// Dead letters only by --state dead, and the marked lease counted once.
	v = f.json(exitOK, "cancel", "--match", "--state", "dead", "--tenant", "initech", "--yes")
	if v["matched"] != 3.0 || v["count"] != 3.0 || v["applied"] != true {
		t.Errorf("cancel --state dead --yes: %v", v)
	}
	if got := f.dead(""); !slices.Equal(got, []string{"globex/d5", hostile + "/d4"}) {
		t.Errorf("dead letters after cancelling initech's: %q", got)
	}
	v = f.json(exitOK, "cancel", "--match", "--tenant", "globex", "--yes")
	if v["count"] != 3.0 { // g1 leased (marked), g2 delayed, eval-3 due
		t.Errorf("cancel of globex's live work: %v", v)
	}
	if v := f.json(exitOK, "cancel", "--match", "--tenant", "globex", "--dry-run"); v["matched"] != 0.0 {
		t.Errorf("a marked lease is counted again: %v", v)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel", "--match", "--state", "frozen", "--dry-run"}, "CancelFilter.State"},
		{[]string{"cancel", "--match", "--state", "cancelled", "--dry-run"}, "CancelFilter.State"},
		{[]string{"cancel", "--match", "--id", "a1"}, "--id names one item"},
		{[]string{"cancel", "--match", "--dry-run", "--yes"}, "not both"},
		{[]string{"cancel", "--match", "--tenant", "a\x00"}, "NUL"},
		{[]string{"cancel", "--match", "--id-prefix", strings.Repeat("p", contract.MaxNameBytes+1)}, "CancelFilter.IDPrefix"},
	} {
		code, out, errOut := f.run(tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %q: exit %d %q %q; want exit 2 naming %q", cut(strings.Join(tc.args, " "), 80), code, out, errOut, tc.want)
		}
	}
	if it := f.state("acme", "a1"); it.State != contract.StateQueued {
		t.Errorf("refused commands changed acme/a1: %+v", it)
	}
}

func TestSignalAndWaiting(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if out := f.ok("waiting"); out != "queue default: no item waits for a signal\n" {
		t.Errorf("waiting with none: %q", out)
	}
	ls := f.claimAll("")
	f.must(f.store.Wait(ctx, ls["a1"], contract.WaitRequest{Signal: "approval", Timeout: time.Hour}))
	f.clock.Advance(time.Minute)
	f.must(f.store.Wait(ctx, ls["a2"], contract.WaitRequest{Signal: "tool-result", Timeout: 10 * time.Minute}))
	f.clock.Advance(30 * time.Second)

	out := f.ok("waiting")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TENANT") ||
		!slices.Equal(strings.Fields(lines[1]), []string{"acme", "a1", "approval", "1m30s", "ago", "in", "58m30s"}) ||
		!slices.Equal(strings.Fields(lines[2]), []string{"acme", "a2", "tool-result", "30s", "ago", "in", "9m30s"}) {
		t.Errorf("waiting, longest first:\n%s", out)
	}
	v := f.json(exitOK, "waiting", "--limit", "1")
	keysOf(t, "waiting output", v, "queue", "waiting", "next")
	ws := list(t, v, "waiting")
	keysOf(t, "a waiting item", ws[0], "tenant", "queue", "id", "signal", "since", "until", "waited_seconds", "times_out_seconds", "attempts")
	if w := ws[0].(map[string]any); len(ws) != 1 || w["id"] != "a1" || w["signal"] != "approval" || w["waited_seconds"] != 90.0 || w["times_out_seconds"] != 3510.0 {
		t.Errorf("waiting --limit 1: %v", v)
	}
	rest := f.json(exitOK, "waiting", "--cursor", v["next"].(string), "--all")
	if ws := list(t, rest, "waiting"); len(ws) != 1 || ws[0].(map[string]any)["id"] != "a2" || rest["next"] != "" {
		t.Errorf("the next page: %v", rest)
	}
	out = f.ok("item", "--tenant", "acme", "--id", "a1")
	if !strings.Contains(out, "for signal approval since 1m30s ago, times out in 58m30s") {
		t.Errorf("item of a waiting item:\n%s", out)
	}
	if ti := tenantOf(t, f.json(exitOK, "tenants"), "acme"); ti["waiting_items"] != 2.0 || ti["ready"] != 0.0 || ti["leased"] != 1.0 {
		t.Errorf("tenants counts acme's waiting items: %v", ti)
	}
	if out := f.ok("tenants"); !strings.Contains(out, " WAITING ") {
		t.Errorf("tenants has no WAITING column:\n%s", out)
	}

	// The wrong signal is refused, naming the one awaited; nothing changes.
	code, out, errOut := f.run("signal", "--tenant", "acme", "--id", "a1", "--signal", "nope")
	if code != exitFailed || out != "" || !strings.Contains(errOut, "nothing changed: item acme / a1 in queue default waits for signal approval, not nope") {
		t.Errorf("the wrong signal: exit %d %q %q", code, out, errOut)
	}
	if it := f.state("acme", "a1"); it.State != contract.StateWaiting {
		t.Fatalf("a refused signal changed a1: %+v", it)
	}
	v = f.json(exitOK, "signal", "--tenant", "acme", "--id", "a1", "--signal", "approval", "--payload", `{"approved":true}`)
	keysOf(t, "signal output", v, "tenant", "queue", "id", "signal", "payload_bytes", "resumed")
	if v["payload_bytes"] != 17.0 || v["resumed"] != true {
		t.Errorf("signal --json: %v", v)
	}
	it := f.state("acme", "a1")
	if it.State != contract.StateQueued || it.Resumed == nil || string(it.Resumed.Payload) != `{"approved":true}` {
		t.Fatalf("a1 after the signal: %+v", it)
	}
	out = f.ok("item", "--tenant", "acme", "--id", "a1")
	if !strings.Contains(out, `by signal approval 0s ago, payload 17 bytes: {"approved":true}`) {
		t.Errorf("item of a resumed item:\n%s", out)
	}
	if v := f.json(exitOK, "item", "--tenant", "acme", "--id", "a1"); v["resumed"].(map[string]any)["signal"] != "approval" {
		t.Errorf("item --json of a resumed item: %v", v)
	}
	// A second signal for the same wait: refused, the item is queued.
	code, _, errOut = f.run("signal", "--tenant", "acme", "--id", "a1", "--signal", "approval")
	if code != exitFailed || !strings.Contains(errOut, "is queued, not waiting for signal approval") {
		t.Errorf("a second signal: exit %d %q", code, errOut)
	}

	// A payload from a file, and from standard input.
	path := filepath.Join(t.TempDir(), "result.json")
	f.must(os.WriteFile(path, []byte("42"), 0o600))
	if out := f.ok("signal", "--tenant", "acme", "--id", "a2", "--signal", "tool-result", "--payload-file", path); out != "item acme / a2 in queue default resumed by signal tool-result (2 bytes): due now\n" {
		t.Errorf("signal --payload-file: %q", out)
	}
	if it := f.state("acme", "a2"); string(it.Resumed.Payload) != "42" {
		t.Errorf("the file's payload: %+v", it.Resumed)
	}
	f.must(f.store.Wait(ctx, ls["a3"], contract.WaitRequest{Signal: "go", Timeout: time.Minute}))
	stdin = strings.NewReader("from stdin")
	t.Cleanup(func() { stdin = os.Stdin })
	f.ok("signal", "--tenant", "acme", "--id", "a3", "--signal", "go", "--payload-file", "-")
	if it := f.state("acme", "a3"); string(it.Resumed.Payload) != "from stdin" {
		t.Errorf("the payload from stdin: %+v", it.Resumed)
	}

	// A wait that timed out refuses the signal.
	ls = f.claimAll("")
	f.must(f.store.Wait(ctx, ls["a3"], contract.WaitRequest{Signal: "go", Timeout: time.Minute}))
	f.clock.Advance(2 * time.Minute)
	if out := f.ok("waiting"); !strings.Contains(out, "TIMED OUT 1m00s ago") {
		t.Errorf("waiting shows no timeout:\n%s", out)
	}
	if code, _, errOut := f.run("signal", "--tenant", "acme", "--id", "a3", "--signal", "go"); code != exitFailed || !strings.Contains(errOut, "not waiting for signal go") {
		t.Errorf("a signal after the timeout: exit %d %q", code, errOut)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"signal", "--tenant", "acme", "--id", "gone", "--signal", "go"}, exitNotFound, "no item acme / gone in queue default"},
		{[]string{"signal", "--tenant", "acme", "--id", "a1"}, exitUsage, "give --signal NAME"},
		{[]string{"signal", "--tenant", "acme", "--signal", "go"}, exitUsage, "give both --tenant and --id"},
		{[]string{"signal", "--tenant", "acme", "--id", "a1", "--signal", "a\x00"}, exitUsage, "NUL"},
		{[]string{"signal", "--tenant", "acme", "--id", "a1", "--signal", "go", "--payload", "x", "--payload-file", path}, exitUsage, "not both"},
		{[]string{"signal", "--tenant", "acme", "--id", "a1", "--signal", "go", "--payload-file", path + ".missing"}, exitUsage, "--payload-file"},
		{[]string{"signal", "--tenant", "acme", "--id", "a1", "--signal", "go", "--payload", strings.Repeat("x", contract.DefaultMaxValueBytes+1)}, exitUsage, "too_large"},
		{[]string{"waiting", "--limit", "0"}, exitUsage, "--limit is 0"},
	} {
		code, _, errOut := f.run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %q: exit %d %q; want exit %d naming %q", cut(strings.Join(tc.args, " "), 80), code, cut(errOut, 200), tc.code, tc.want)
		}
	}
}

func TestPurgeCancelled(t *testing.T) {
	f := newFixture(t)
	f.ok("cancel", "--tenant", "acme", "--id", "a1")
	f.clock.Advance(2 * time.Hour)
	f.ok("cancel", "--tenant", "acme", "--id", "a2")
	if ti := tenantOf(t, f.json(exitOK, "tenants"), "acme"); ti["cancelled"] != 2.0 || ti["ready"] != 1.0 {
		t.Errorf("tenants counts acme's cancelled items: %v", ti)
	}
	if out := f.ok("purge-cancelled", "--older-than", "1h"); out != "queue default: purged 1 item cancelled more than 1h0m0s ago\n" {
		t.Errorf("purge-cancelled: %q", out)
	}
	if _, err := f.store.Item(t.Context(), contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "a1"}); err == nil {
		t.Error("a1 is still there")
	}
	if it := f.state("acme", "a2"); it.State != contract.StateCancelled {
		t.Errorf("a2, cancelled within the hour: %+v", it)
	}
	v := f.json(exitOK, "purge-cancelled", "--older-than", "0")
	keysOf(t, "purge-cancelled output", v, "queue", "before", "count")
	if v["count"] != 1.0 {
		t.Errorf("purge-cancelled --older-than 0: %v", v)
	}
	// Its id may be used again.
	f.must(f.store.Enqueue(t.Context(), contract.Item{Tenant: "acme", ID: "a2"}))
	if it := f.state("acme", "a2"); it.State != contract.StateQueued {
		t.Errorf("a2 enqueued again: %+v", it)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"purge-cancelled"}, "give --older-than DURATION"},
		{[]string{"purge-cancelled", "--older-than", "-1h"}, "--older-than is -1h0m0s"},
		{[]string{"purge-cancelled", "--older-than", "soon"}, "invalid value"},
	} {
		if code, _, errOut := f.run(tc.args...); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %q: exit %d %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

// item shows a priority and the snoozes.
func TestItemPriorityAndSnoozes(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	f.must(f.store.Enqueue(ctx, contract.Item{Tenant: "hi", Queue: "p", ID: "p1", Priority: 7}))
	ls := f.claimAll("p")
	if _, err := f.store.Snooze(ctx, ls["p1"], time.Minute); err != nil {
		t.Fatal(err)
	}
	out := f.ok("item", "--queue", "p", "--tenant", "hi", "--id", "p1")
	fields := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"priority 7 attempts 0 snoozes 1", "due in 1m00s"} {
		if !strings.Contains(fields, want) {
			t.Errorf("item lacks %q:\n%s", want, out)
		}
	}
	if v := f.json(exitOK, "item", "--queue", "p", "--tenant", "hi", "--id", "p1"); v["priority"] != 7.0 || v["snoozes"] != 1.0 || v["attempts"] != 0.0 {
		t.Errorf("item --json: %v", v)
	}
}

// tenantOf is one tenant's row of tenants --json.
func tenantOf(t *testing.T, v map[string]any, tenant string) map[string]any {
	t.Helper()
	for _, r := range list(t, v, "tenants") {
		if m := r.(map[string]any); m["tenant"] == tenant {
			return m
		}
	}
	t.Fatalf("no tenant %s in %v", tenant, v)
	return nil
}
