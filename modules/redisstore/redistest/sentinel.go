package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replicated is a master, its replica and three Sentinels monitoring
// them, all started by a test.
type Replicated struct {
	Master, Replica *Server
	Sentinels       []*Server
	Name            string // the master's name in Sentinel
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
	// ReplicaVia, when set, is given the master's address and returns the
	// host:port the replica replicates from instead: a proxy of the
	// test's, which it can mute so that the replica falls behind while
	// the master goes on acknowledging writes.
	ReplicaVia func(t testing.TB, masterAddr string) string
}

// StartReplicated starts a master (with the extra arguments), a replica
// of it, and three Sentinels (redis-server --sentinel, quorum 2), waits
// until the replica is in sync and every Sentinel knows the replica and
// its two peers, and kills them all when the test ends.
func StartReplicated(t testing.TB, o SentinelOptions, masterArgs ...string) *Replicated {
	t.Helper()
	r := &Replicated{Name: "adkmaster"}
	r.Master = StartServer(t, masterArgs...)
	upstream := r.Master.Addr()
	if o.ReplicaVia != nil {
		upstream = o.ReplicaVia(t, upstream)
	}
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		t.Fatalf("SentinelOptions.ReplicaVia returned %q, want host:port: %v", upstream, err)
	}
	r.Replica = StartServer(t, append([]string{"--replicaof", host, port}, masterArgs...)...)
	ctx := context.Background()
	replica := r.Replica.Client(t, nil)
	waitFor(t, 20*time.Second, "the replica to sync", func() bool {
		info, err := replica.Info(ctx, "replication").Result()
		return err == nil && containsLine(info, "master_link_status:up")
	})
	for range 3 {
		s := newServer(t, []string{"--sentinel"})
		s.conf = filepath.Join(s.Dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s %d\nsentinel resolve-hostnames no\n",
			r.Name, r.Master.Port, r.Name, o.DownAfter.Milliseconds(), r.Name, o.FailoverTimeout.Milliseconds())
		if err := os.WriteFile(s.conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
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

// HoldInSync makes the replica hold every write the master has
// acknowledged, and keeps it so: it pauses the master's writes (CLIENT
// PAUSE WRITE: a write command or script waits, unanswered, instead of
// running) and waits until the replica's replication offset reaches
// the master's. Asynchronous replication alone leaves the last
// milliseconds of acknowledged writes on the master only; a test that
// kills the master after HoldInSync loses none of them, and the paused
// writes fail with the connection and are retried on the new master.
func (r *Replicated) HoldInSync(ctx context.Context, limit time.Duration) error {
	m := redis.NewClient(&redis.Options{Addr: r.Master.Addr()})
	defer m.Close()
	rc := redis.NewClient(&redis.Options{Addr: r.Replica.Addr()})
	defer rc.Close()
	if err := m.Do(ctx, "CLIENT", "PAUSE", limit.Milliseconds(), "WRITE").Err(); err != nil {
		return fmt.Errorf("pause the master's writes: %w", err)
	}
	info, err := m.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("read the master's replication offset: %w", err)
	}
	want, ok := infoInt(info, "master_repl_offset")
	if !ok {
		return fmt.Errorf("the master reports no master_repl_offset")
	}
	deadline := time.Now().Add(limit)
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil {
			if got, ok := infoInt(info, "slave_repl_offset"); ok && got >= want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica did not reach the master's offset %d within %v", want, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// infoInt reads an integer field of an INFO reply.
func infoInt(info, field string) (int64, bool) {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			var n int64
			if _, err := fmt.Sscan(v, &n); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}
