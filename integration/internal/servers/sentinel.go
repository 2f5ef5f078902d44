package servers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/integration/internal/proxy"
)

// Replicated is a master, its replica and three Sentinels monitoring
// them, all started by a test.
type Replicated struct {
	Master, Replica *Redis
	Sentinels       []*Redis
	Name            string // the master's name in Sentinel
	// Link, with SentinelOptions.Link, is the proxy the replica reaches
	// its master through: Mute it and the replica falls behind while the
	// master goes on acknowledging writes.
	Link *proxy.Proxy
}

// SentinelOptions are the Sentinels' timings.
type SentinelOptions struct {
	// DownAfter is down-after-milliseconds: how long the master must be
	// unreachable before a Sentinel calls it down (Redis's default 30s).
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout (Redis's default 3m). With Link
	// it must outlast the test's load: a Sentinel points a replica that
	// names another master address back at the master after it.
	FailoverTimeout time.Duration
	// Link puts a proxy between the replica and its master (Replicated.Link).
	Link bool
}

// StartReplicated starts a master (with the extra arguments), a replica
// of it, and three Sentinels (redis-server --sentinel, quorum 2), waits
// until the replica is in sync and every Sentinel knows the replica and
// its two peers, and kills them all when the test ends.
func StartReplicated(t testing.TB, o SentinelOptions, masterArgs ...string) *Replicated {
	t.Helper()
	r := &Replicated{Name: "adkmaster"}
	r.Master = StartRedis(t, masterArgs...)
	upstream := r.Master.Port
	if o.Link {
		px, err := proxy.Start(r.Master.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = px.Close() })
		r.Link, upstream = px, px.Port()
	}
	r.Replica = StartRedis(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(upstream)}, masterArgs...)...)
	ctx := context.Background()
	waitFor(t, 20*time.Second, "the replica to sync", func() bool {
		info, err := r.Replica.Client(t).Info(ctx, "replication").Result()
		return err == nil && containsLine(info, "master_link_status:up")
	})
	for range 3 {
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s %d\nsentinel resolve-hostnames no\n",
			r.Name, r.Master.Port, r.Name, o.DownAfter.Milliseconds(), r.Name, o.FailoverTimeout.Milliseconds())
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &Redis{t: t, Port: FreePort(t), Dir: dir, conf: conf, args: []string{"--sentinel"}}
		s.Start()
		t.Cleanup(s.Kill)
		r.Sentinels = append(r.Sentinels, s)
	}
	for _, s := range r.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		waitFor(t, 20*time.Second, "the Sentinels to discover each other", func() bool {
			f, err := c.Master(ctx, r.Name).Result()
			return err == nil && f["num-other-sentinels"] == "2" && f["num-slaves"] == "1"
		})
		_ = c.Close()
	}
	return r
}

// SentinelAddrs returns the Sentinels' host:port addresses.
func (r *Replicated) SentinelAddrs() []string {
	var out []string
	for _, s := range r.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// MasterAddr asks the first Sentinel that answers for the master's
// address.
func (r *Replicated) MasterAddr(ctx context.Context) (string, error) {
	var last error
	for _, s := range r.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		addr, err := c.GetMasterAddrByName(ctx, r.Name).Result()
		_ = c.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1], nil
		}
		last = err
	}
	return "", last
}

func waitFor(t testing.TB, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func containsLine(info, line string) bool {
	for _, l := range strings.Split(info, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// AllNameMaster reports whether every Sentinel names addr as the master.
// A Sentinel that has not yet heard of a failover names the old master
// for a second or so after the others: a client asking it then is sent
// to the old address.
func (r *Replicated) AllNameMaster(ctx context.Context, addr string) bool {
	for _, s := range r.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		got, err := c.GetMasterAddrByName(ctx, r.Name).Result()
		_ = c.Close()
		if err != nil || len(got) != 2 || got[0]+":"+got[1] != addr {
			return false
		}
	}
	return true
}
