//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

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

// TestOutOfMemory: a full server (noeviction) refuses writes; the store
// reports it at once as the retryable unavailable error, not a raw reply.
func TestOutOfMemory(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t, "--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
	client := srv.Client(t, nil)
	st, _ := redisstore.NewState(client, nil, redisstore.Settings{})
	q, _ := redisstore.NewQueue(client, nil, redisstore.Settings{})
	defer q.Close()
	payload := make([]byte, 64<<10)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i" + strconv.Itoa(i), Payload: payload})
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
}
