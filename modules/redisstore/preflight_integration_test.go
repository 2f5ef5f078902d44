//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestPreflightServers starts one redis-server per configuration and
// checks what Preflight, OpenState and OpenQueue make of it. The shared
// server is never reconfigured.
func TestPreflightServers(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		settings redisstore.Settings
		refuse   string // the PreflightError's Setting, "" when accepted
		mention  string // a word the refusal must contain
	}{
		{"allkeys-lru", []string{"--maxmemory-policy", "allkeys-lru", "--appendonly", "yes"}, redisstore.Settings{}, "maxmemory-policy", "noeviction"},
		{"allkeys-lfu", []string{"--maxmemory-policy", "allkeys-lfu", "--appendonly", "yes"}, redisstore.Settings{}, "maxmemory-policy", "noeviction"},
		{"volatile-ttl", []string{"--maxmemory-policy", "volatile-ttl", "--appendonly", "yes"}, redisstore.Settings{}, "maxmemory-policy", "noeviction"},
		{"volatile-lru is fine", []string{"--maxmemory-policy", "volatile-lru", "--appendonly", "yes"}, redisstore.Settings{}, "", ""},
		{"noeviction+aof", []string{"--maxmemory-policy", "noeviction", "--appendonly", "yes"}, redisstore.Settings{}, "", ""},
		{"noeviction+rdb", []string{"--maxmemory-policy", "noeviction", "--save", "900 1"}, redisstore.Settings{}, "", ""},
		{"no persistence, durable", []string{"--maxmemory-policy", "noeviction"}, redisstore.Settings{}, "persistence", "appendonly"},
		{"no persistence, not durable", []string{"--maxmemory-policy", "noeviction"}, redisstore.Settings{Volatile: true}, "", ""},
		{"config renamed", []string{"--rename-command", "CONFIG", ""}, redisstore.Settings{}, "CONFIG", "AssumeDurable"},
		{"config renamed, assume durable", []string{"--rename-command", "CONFIG", ""}, redisstore.Settings{AssumeDurable: true}, "", ""},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t, tc.args...)
			client := srv.Client(t, nil)
			rep, err := redisstore.Preflight(ctx, client, tc.settings)
			_, errState := redisstore.OpenState(ctx, client, nil, tc.settings)
			q, errQueue := redisstore.OpenQueue(ctx, client, nil, tc.settings)
			if q != nil {
				_ = q.Close()
			}
			_, q, errBoth := redisstore.Open(ctx, client, nil, tc.settings)
			if q != nil {
				_ = q.Close()
			}
			if tc.refuse == "" {
				if err != nil || errState != nil || errQueue != nil || errBoth != nil {
					t.Fatalf("refused: %v / %v / %v / %v", err, errState, errQueue, errBoth)
				}
				if rep.Verdict() == contract.HealthFail {
					t.Errorf("accepted but the verdict is fail: %+v", rep.Checks)
				}
				return
			}
			for _, e := range []error{err, errState, errQueue, errBoth} {
				var pe *contract.PreflightError
				if !errors.As(e, &pe) {
					t.Fatalf("got %v, want a *contract.PreflightError", e)
				}
				if pe.Setting != tc.refuse || !strings.Contains(pe.Error(), tc.mention) {
					t.Errorf("refusal %q: want setting %q mentioning %q", pe.Error(), tc.refuse, tc.mention)
				}
			}
			if rep.Verdict() != contract.HealthFail {
				t.Errorf("refused but the verdict is %s", rep.Verdict())
			}
		})
	}
}

// TestHealthReportsRefusal: the Inspector shows a refusing server's
// verdict instead of failing.
func TestHealthReportsRefusal(t *testing.T) {
	srv := redistest.StartServer(t, "--maxmemory-policy", "allkeys-lru")
	q, err := redisstore.NewQueue(srv.Client(t, nil), nil, redisstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := q.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Status() != contract.HealthFail || !strings.HasPrefix(h.Details["preflight"], "refused") {
		t.Errorf("health %+v, want a failed check and a refused verdict", h)
	}
	if h.Details["used_memory_human"] == "" || h.Details["evicted_keys"] == "" {
		t.Errorf("health details lack memory facts: %v", h.Details)
	}
}

// TestOutOfMemory: a full server (noeviction) refuses what adds data; the
// store reports it at once as the retryable unavailable error, not a raw
// reply. What drains the queue still runs, whether its function was
// loaded before the server filled or not, and once drained the server
// takes new items again.
func TestOutOfMemory(t *testing.T) {
	for _, mode := range []redisstore.ScriptMode{redisstore.ScriptsFunctions, redisstore.ScriptsEval} {
		t.Run(string(mode), func(t *testing.T) { testOutOfMemory(t, mode) })
	}
}

// testOutOfMemory fills a server and drains it with the store running its
// scripts in mode: by EVALSHA the scripts carry their functions' flags in
// a shebang line, so a full server treats them alike.
func testOutOfMemory(t *testing.T, mode redisstore.ScriptMode) {
	ctx := context.Background()
	srv := redistest.StartServer(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
	client := srv.Client(t, nil)
	st, _ := redisstore.NewState(client, nil, redisstore.Settings{Scripts: mode})
	q, _ := redisstore.NewQueue(client, nil, redisstore.Settings{Scripts: mode})
	defer q.Close()
	// Claim and Complete run once before the server fills, so their
	// functions are loaded (or their scripts cached) and run as such;
	// Heartbeat's and Fail's are first called on the full server, which
	// will not load them.
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	warm, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, warm...); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 64<<10)
	queued := 0
	for ; queued < 1000; queued++ {
		if err = q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i" + strconv.Itoa(queued), Payload: payload}); err != nil {
			break
		}
	}
	if queued < 2 {
		t.Fatalf("the server was full after %d enqueues; want room for a few first", queued)
	}
	var qe *contract.QueueUnavailableError
	if !errors.As(err, &qe) || !contract.Retryable(err) || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("enqueue into a full server: %v; want a retryable QueueUnavailableError naming OOM", err)
	}
	_, err = st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r", Data: []byte(`{"big":"` + strings.Repeat("x", 64<<10) + `"}`)})
	var spe *contract.StatePersistenceError
	if !errors.As(err, &spe) || spe.Reason != contract.ReasonUnavailable || !contract.Retryable(err) {
		t.Errorf("put into a full server: %v; want a retryable unavailable StatePersistenceError", err)
	}
	// Draining is what frees a full server, so the work already queued
	// still goes through: claimed, heartbeated, failed back and completed.
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 100})
	if err != nil || len(ls) == 0 {
		t.Fatalf("claim from a full server: %d leases, %v; want the queued items", len(ls), err)
	}
	if l, err := q.Heartbeat(ctx, ls[0], time.Minute); err != nil {
		t.Errorf("heartbeat on a full server: %v", err)
	} else {
		ls[0] = l
	}
	if _, err := q.Fail(ctx, ls[len(ls)-1], errors.New("again")); err != nil {
		t.Errorf("fail on a full server: %v", err)
	}
	if err := q.Complete(ctx, ls[:len(ls)-1]...); err != nil {
		t.Errorf("complete on a full server: %v", err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "after", Payload: payload}); err != nil {
		t.Errorf("enqueue once the queue drained: %v", err)
	}
}
