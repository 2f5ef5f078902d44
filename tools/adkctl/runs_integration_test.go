//go:build integration

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/redisstore"
)

// runsOnServer writes run acme/r five times through st (a store keeping 3
// versions) and drives adkctl runs against the same server: without
// --keep-versions it sees the current run only, with the deployment's
// policy it lists, shows and forks.
func runsOnServer(t *testing.T, env map[string]string, flags []string, st contract.StateStore) {
	t.Helper()
	ctx := t.Context()
	for i := range 5 {
		if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Status: "step-" + string(rune('1'+i)), Version: int64(i),
			Data: json.RawMessage(`{"n":` + string(rune('1'+i)) + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	decode := func(want int, args ...string) map[string]any {
		t.Helper()
		code, out, errOut := runArgs(t, env, append(append(args, flags...), "--json")...)
		if code != want {
			t.Fatalf("adkctl %q: exit %d, want %d; %q", args, code, want, errOut)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("adkctl %q: %v\n%s", args, err, out)
		}
		return v
	}
	if v := decode(exitOK, "runs", "versions", "--tenant", "acme", "--id", "r"); len(v["versions"].([]any)) != 1 {
		t.Errorf("without the deployment's policy: %v; want the current run alone", v["versions"])
	}
	v := decode(exitOK, "runs", "versions", "--tenant", "acme", "--id", "r", "--keep-versions", "3")
	var got []float64
	for _, r := range v["versions"].([]any) {
		got = append(got, r.(map[string]any)["version"].(float64))
	}
	if len(got) != 4 || got[0] != 5 || got[3] != 2 || v["current_version"] != 5.0 {
		t.Errorf("versions with --keep-versions 3: %v (current %v); want 5 4 3 2", got, v["current_version"])
	}
	s := decode(exitOK, "runs", "show", "--tenant", "acme", "--id", "r", "--version", "3", "--keep-versions", "3")
	if s["run"].(map[string]any)["status"] != "step-3" || s["data_json"].(map[string]any)["n"] != 3.0 {
		t.Errorf("version 3: %v", s)
	}
	if code, _, errOut := runArgs(t, env, append([]string{"runs", "show", "--tenant", "acme", "--id", "r", "--version", "1", "--keep-versions", "3"}, flags...)...); code != exitNotFound {
		t.Errorf("a pruned version: exit %d, %q; want 3", code, errOut)
	}
	f := decode(exitOK, "runs", "fork", "--tenant", "acme", "--id", "r", "--version", "3", "--to", "r-again", "--keep-versions", "3")
	if f["run"].(map[string]any)["id"] != "r-again" {
		t.Errorf("fork: %v", f)
	}
	run, err := st.GetRun(ctx, "acme", "r-again")
	if err != nil || run.Status != "step-3" || string(run.Data) != `{"n":3}` {
		t.Fatalf("the forked run: %+v, %v", run, err)
	}
	code, _, errOut := runArgs(t, env, append([]string{"runs", "fork", "--tenant", "acme", "--id", "r", "--version", "4", "--to", "r-again", "--keep-versions", "3"}, flags...)...)
	if code != exitFailed || !strings.Contains(errOut, "exists already") {
		t.Errorf("a fork onto an existing run: exit %d, %q", code, errOut)
	}
}

func TestRunsVerbsOnRedis(t *testing.T) {
	dsn, client, ns := redisNamespace(t)
	st, err := redisstore.NewState(client, nil, redisstore.Settings{Namespace: ns, Runs: contract.RunPolicy{KeepVersions: 3}})
	if err != nil {
		t.Fatal(err)
	}
	runsOnServer(t, map[string]string{"ADK_REDIS_DSN": dsn}, []string{"--redis-namespace", ns, "--redis-volatile"}, st)
}

func TestRunsVerbsOnPostgres(t *testing.T) {
	dsn := scratchDSN(t, "30s")
	env := map[string]string{"ADK_POSTGRES_DSN": dsn}
	if code, _, errOut := runArgs(t, env, "schema", "apply"); code != exitOK {
		t.Fatalf("schema apply: %d %q", code, errOut)
	}
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := pgstore.NewState(pool, nil, pgstore.Settings{Runs: contract.RunPolicy{KeepVersions: 3}})
	if err != nil {
		t.Fatal(err)
	}
	runsOnServer(t, env, nil, st)
}
