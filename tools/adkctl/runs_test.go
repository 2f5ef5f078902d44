package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

// newRunsFixture is the usual fixture over a store keeping 10 versions,
// with run acme/r1 written four times: versions 1 to 4, the last by
// fence 9 with a hostile status.
func newRunsFixture(t *testing.T, keep int) *fixture {
	t.Helper()
	f := newFixture(t)
	f.store = memstore.New(f.clock, memstore.Settings{Runs: contract.RunPolicy{KeepVersions: keep}})
	ctx := t.Context()
	for i, st := range []string{"planning", "calling", "tools", "done \x1b[2J"} {
		f.clock.Advance(time.Second)
		_, err := f.store.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Status: st, Version: int64(i),
			Fence: int64(6 + i), Data: json.RawMessage(`{"step":` + string(rune('1'+i)) + `}`),
			Counters: contract.Counters{Iterations: int64(i + 1)}})
		f.must(err)
	}
	return f
}

func TestRunsVersionsListsNewestFirst(t *testing.T) {
	f := newRunsFixture(t, 10)
	v := f.json(exitOK, "runs", "versions", "--tenant", "acme", "--id", "r1")
	keysOf(t, "runs versions --json", v, "tenant", "id", "current_version", "versions", "next")
	vs := v["versions"].([]any)
	if len(vs) != 4 || v["current_version"] != 4.0 {
		t.Fatalf("versions %v (current %v), want 4 with version 4 current", vs, v["current_version"])
	}
	keysOf(t, "a version row", vs[0], "version", "current", "updated_at", "status", "counters", "fence", "data_bytes", "preview")
	for i, want := range []float64{4, 3, 2, 1} {
		row := vs[i].(map[string]any)
		if row["version"] != want || row["current"] != (want == 4) {
			t.Errorf("row %d is %v, want version %v (current only for 4)", i, row, want)
		}
	}
	if vs[0].(map[string]any)["fence"] != 9.0 {
		t.Errorf("the newest version has fence %v, want 9", vs[0].(map[string]any)["fence"])
	}
	// Paging: the second page knows the current version too.
	p1 := f.json(exitOK, "runs", "versions", "--tenant", "acme", "--id", "r1", "--limit", "3")
	next, _ := p1["next"].(string)
	if next == "" || len(p1["versions"].([]any)) != 3 {
		t.Fatalf("a page of 3 of 4 versions: %v", p1)
	}
	p2 := f.json(exitOK, "runs", "versions", "--tenant", "acme", "--id", "r1", "--limit", "3", "--cursor", next)
	rows := p2["versions"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["version"] != 1.0 || rows[0].(map[string]any)["current"] != false || p2["current_version"] != 4.0 {
		t.Errorf("the second page: %v", p2)
	}
	// The table escapes the hostile status and marks the current version.
	out := f.ok("runs", "versions", "--tenant", "acme", "--id", "r1")
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `done \x1b[2J`) || !strings.Contains(out, "4 (current)") {
		t.Errorf("the table:\n%s", out)
	}
}

func TestRunsShowAndFork(t *testing.T) {
	f := newRunsFixture(t, 10)
	v := f.json(exitOK, "runs", "show", "--tenant", "acme", "--id", "r1", "--version", "2")
	keysOf(t, "runs show --json", v, "run", "current", "data_json")
	if v["current"] != false || v["data_json"].(map[string]any)["step"] != 2.0 || v["run"].(map[string]any)["status"] != "calling" {
		t.Errorf("version 2: %v", v)
	}
	out := f.ok("runs", "show", "--tenant", "acme", "--id", "r1", "--version", "4")
	if !strings.Contains(out, "4 (current)") || !strings.Contains(out, `"step": 4`) || strings.Contains(out, "\x1b") {
		t.Errorf("runs show of the current version:\n%s", out)
	}
	if code, _, errOut := f.run("runs", "show", "--tenant", "acme", "--id", "r1", "--version", "9"); code != exitNotFound || !strings.Contains(errOut, "version 9") {
		t.Errorf("a version not kept: exit %d, %q; want 3 naming it", code, errOut)
	}

	fv := f.json(exitOK, "runs", "fork", "--tenant", "acme", "--id", "r1", "--version", "2", "--to", "r1-retry")
	if fv["run"].(map[string]any)["id"] != "r1-retry" || fv["data_json"].(map[string]any)["step"] != 2.0 {
		t.Errorf("fork: %v", fv)
	}
	got, err := f.store.GetRun(t.Context(), "acme", "r1-retry")
	if err != nil || got.Status != "calling" || string(got.Data) != `{"step":2}` {
		t.Fatalf("the forked run in the store: %+v, %v", got, err)
	}
	// A second fork onto the same id is refused and changes nothing.
	code, _, errOut := f.run("runs", "fork", "--tenant", "acme", "--id", "r1", "--version", "3", "--to", "r1-retry")
	if code != exitFailed || !strings.Contains(errOut, "exists already") {
		t.Errorf("fork onto an existing run: exit %d, %q", code, errOut)
	}
	again, err := f.store.GetRun(t.Context(), "acme", "r1-retry")
	if err != nil || again.Version != got.Version || string(again.Data) != `{"step":2}` {
		t.Errorf("the refused fork changed the run: %+v, %v", again, err)
	}
}

func TestRunsRefusesBadInput(t *testing.T) {
	f := newRunsFixture(t, 10)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"runs"}, exitUsage, "usage: adkctl runs"},
		{[]string{"runs", "rewind"}, exitUsage, `unknown command "rewind"`},
		{[]string{"runs", "versions", "--tenant", "acme"}, exitUsage, "--id"},
		{[]string{"runs", "show", "--tenant", "acme", "--id", "r1"}, exitUsage, "version"},
		{[]string{"runs", "show", "--tenant", "acme", "--id", "r1", "--version", "-1"}, exitUsage, "version"},
		{[]string{"runs", "fork", "--tenant", "acme", "--id", "r1", "--version", "1"}, exitUsage, "--to"},
		{[]string{"runs", "versions", "--tenant", "acme", "--id", "nope"}, exitNotFound, "no run"},
		{[]string{"runs", "fork", "--tenant", "acme", "--id", "r1", "--version", "7", "--to", "x"}, exitNotFound, "version 7"},
	} {
		code, _, errOut := f.run(c.args...)
		if code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("adkctl %q: exit %d, stderr %q; want exit %d saying %q", c.args, code, errOut, c.code, c.says)
		}
	}
	if _, err := f.store.GetRun(t.Context(), "acme", "x"); err == nil {
		t.Error("a refused fork wrote its run")
	}
}

func TestRunsOnAStoreKeepingNoVersions(t *testing.T) {
	f := newRunsFixture(t, 0)
	out := f.ok("runs", "versions", "--tenant", "acme", "--id", "r1")
	if !strings.Contains(out, "4 (current)") || !strings.Contains(out, "only the current run is kept") {
		t.Errorf("a store keeping no versions:\n%s", out)
	}
	if code, _, _ := f.run("runs", "show", "--tenant", "acme", "--id", "r1", "--version", "3"); code != exitNotFound {
		t.Errorf("an earlier version of a store keeping none: exit %d, want 3", code)
	}
}
