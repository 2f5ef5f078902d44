//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// The command over a Redis Cluster with --redis-cluster --redis-shards 3
// (the cluster URL in ADK_REDIS_DSN): the queue page shows the 3 shards
// of a queue a deployment of 3 shards filled, each on its own master.
func TestShardsOnAClusterThroughTheCommand(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	addrs := cl.Addrs()
	q, err := redisstore.NewQueue(cl.Client(t, &redis.ClusterOptions{}), nil, redisstore.Settings{Shards: 3, Volatile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const tenants = 30
	for i := range tenants {
		if err := q.Enqueue(t.Context(), contract.Item{Tenant: "t" + strconv.Itoa(i), ID: "a"}, contract.Item{Tenant: "t" + strconv.Itoa(i), ID: "b"}); err != nil {
			t.Fatal(err)
		}
	}
	if ls, err := q.Claim(t.Context(), contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 7}); err != nil || len(ls) != 7 {
		t.Fatalf("claim: %d, %v", len(ls), err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	dsn := "redis://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--redis-cluster", "--redis-shards", "3", "--redis-volatile"}, env("ADK_REDIS_DSN", dsn), pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "adk dashboard: http://127.0.0.1:") {
		cancel()
		t.Fatalf("first line %q (run: %v)", lines.Text(), <-done)
	}
	url := strings.TrimPrefix(lines.Text(), "adk dashboard: ")
	go func() {
		for lines.Scan() {
		}
	}()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	page := get("queue")
	if n := strings.Count(page, `data-testid="shard-row"`); n != 3 {
		t.Errorf("the queue page shows %d shard rows, want 3", n)
	}
	for _, a := range addrs {
		if !strings.Contains(page, "<code>"+a+"</code>") {
			t.Errorf("the queue page does not name master %s", a)
		}
	}
	var api struct {
		Sharded bool
		Total   struct{ Queued, Leased, Tenants int }
	}
	if err := json.Unmarshal([]byte(get("api/shards")), &api); err != nil {
		t.Fatal(err)
	}
	if !api.Sharded || api.Total.Queued != 2*tenants-7 || api.Total.Leased != 7 || api.Total.Tenants != tenants {
		t.Errorf("/api/shards: %+v", api)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}
