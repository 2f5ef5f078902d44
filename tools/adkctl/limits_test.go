package main

import (
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
)

func TestLimits(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	// Set merges: a second set changes only the flags it gives.
	f.ok("limits", "set", "--tenant", "acme", "--max-leased", "1", "--rate", "5")
	out := f.ok("limits", "set", "--tenant", "acme", "--weight", "3")
	if !strings.Contains(out, "tenant acme limits cap 1, 5/s (burst 5), weight 3") {
		t.Errorf("set output %q", out)
	}
	v := f.json(exitOK, "limits", "set", "--default", "--budget-cost", "2000000", "--budget-window", "1h")
	keysOf(t, "limits set output", v, "queue", "tenant", "limits")
	ql, err := f.store.Limits(ctx, "")
	f.must(err)
	if want := (contract.Limits{MaxLeased: 1, Rate: 5, Weight: 3}); ql.Tenants["acme"] != want {
		t.Fatalf("acme's limits are %+v, want %+v", ql.Tenants["acme"], want)
	}
	if ql.Default.Budget != (contract.Budget{CostMicros: 2_000_000, Window: time.Hour}) {
		t.Fatalf("the default is %+v", ql.Default)
	}

	// acme has three ready items and a cap of 1: claim one, and it is held.
	if _, err := f.store.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}); err != nil {
		t.Fatal(err)
	}
	out = f.ok("limits", "show")
	for _, want := range []string{"default limits budget 2 per 1h0m0s", "cap 1, 5/s (burst 5), weight 3", "1/1", "cap"} {
		if !strings.Contains(out, want) {
			t.Errorf("limits show lacks %q:\n%s", want, out)
		}
	}
	v = f.json(exitOK, "limits", "show")
	keysOf(t, "limits show output", v, "queue", "default", "tenants")
	var acme map[string]any
	for _, r := range list(t, v, "tenants") {
		if m := r.(map[string]any); m["tenant"] == "acme" {
			acme = m
		}
	}
	if acme == nil || acme["held"] != "cap" || acme["leased"] != 1.0 || acme["own"] != true {
		t.Errorf("acme in limits show --json: %v", acme)
	}

	// Refusals change nothing.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"limits", "set", "--tenant", "acme", "--weight", "-1"}, "Limits.Weight"},
		{[]string{"limits", "set", "--tenant", "acme", "--budget-cost", "5"}, "Limits.Budget.Window"},
		{[]string{"limits", "set", "--tenant", "acme"}, "at least one limit flag"},
		{[]string{"limits", "set", "--max-leased", "2"}, "--tenant NAME, or --default"},
		{[]string{"limits", "set", "--tenant", "acme", "--default", "--weight", "2"}, "not both"},
	} {
		code, _, errOut := f.run(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %q: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
	ql2, err := f.store.Limits(ctx, "")
	f.must(err)
	if ql2.Tenants["acme"] != ql.Tenants["acme"] || ql2.Default != ql.Default {
		t.Errorf("refused commands changed the limits: %+v", ql2)
	}

	f.ok("limits", "clear", "--tenant", "acme")
	f.ok("limits", "clear", "--default")
	ql, err = f.store.Limits(ctx, "")
	f.must(err)
	if len(ql.Tenants) != 0 || !ql.Default.IsZero() {
		t.Errorf("after clear: %+v", ql)
	}
	if code, _, errOut := f.run("limits", "frob"); code != exitUsage || !strings.Contains(errOut, "show, set or clear") {
		t.Errorf("limits frob: exit %d %q", code, errOut)
	}
}
