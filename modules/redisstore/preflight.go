package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// PreflightReport is what Preflight read from the server: one check per
// setting, worst first when refused, and the facts worth displaying.
type PreflightReport struct {
	Checks  []contract.HealthCheck
	Details map[string]string
}

// Verdict is the worst status among the checks.
func (r PreflightReport) Verdict() string {
	return contract.Health{Checks: r.Checks}.Status()
}

const fixAssumeDurable = "the server does not let this client read CONFIG (managed Redis, or CONFIG renamed away); " +
	"confirm with the provider that maxmemory-policy is noeviction or volatile-* and that AOF or RDB snapshots are on, " +
	"then set Settings.AssumeDurable to skip this check"

// Preflight reads the server's configuration (CONFIG GET maxmemory-policy,
// appendonly, save; INFO) and refuses, with a *contract.PreflightError, a
// server that would lose a run:
//
//   - maxmemory-policy allkeys-* or volatile-ttl: eviction drops keys the
//     store relies on (volatile-lru/lfu/random are fine: no key this kit
//     writes carries a TTL);
//   - appendonly no with an empty save, unless settings.Volatile is set: a
//     restart loses everything;
//   - CONFIG unavailable, unless settings.AssumeDurable.
//
// It also reports replication (INFO replication; CONFIG GET
// min-replicas-to-write, min-replicas-max-lag): the role, the connected
// replicas, and a warning where acknowledged writes can be lost on a
// failover (replicas but neither Settings.WaitReplicas nor
// min-replicas-to-write), where Settings.WaitReplicas asks for more
// replicas than are connected, or where the client reached a replica.
// A standalone server without replicas is fine.
//
// It refuses, too, a namespace whose queues still hold items or dead
// letters in the key layout of a release before declared keys, which this
// release does not read (Setting [SettingQueueLayout]; the fix names the
// queues and the migration, [RedisWorkQueue.MigrateLayout] or adkctl redis
// migrate-layout), and warns of a queue created by such a release that
// lacks its placeholders. For this it reads each queue's tenant set a
// thousand at a time and checks their old keys with EXISTS.
//
// It never changes the server. On Redis Cluster every master is checked.
func Preflight(ctx context.Context, client redis.UniversalClient, settings Settings) (PreflightReport, error) {
	s, err := settings.normalized()
	if err != nil {
		return PreflightReport{}, err
	}
	var (
		mu      sync.Mutex
		reports []nodeReport
	)
	check := func(ctx context.Context, c redis.Cmdable) error {
		r, err := inspectNode(ctx, c)
		if err != nil {
			return err
		}
		mu.Lock()
		reports = append(reports, r)
		mu.Unlock()
		return nil
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return check(ctx, c) })
	} else {
		err = check(ctx, client)
	}
	var (
		layout  contract.HealthCheck
		refusal *contract.PreflightError
	)
	if err == nil {
		// Each shard's queue keys share one hash tag, so this reads the
		// master that serves each shard.
		layout, refusal, err = layoutCheck(ctx, client, s.Namespace, s.Shards)
	}
	if err != nil {
		if kind := classify(err); kind == kindPool {
			return PreflightReport{}, &contract.PoolExhaustedError{Backing: "redis", Err: err}
		}
		return PreflightReport{}, fmt.Errorf("redisstore: preflight: %w", err)
	}
	rep, err := judge(reports, s)
	rep.Checks = append(rep.Checks, layout)
	if err == nil && refusal != nil {
		err = refusal
	}
	return rep, err
}

// nodeReport is what one server said.
type nodeReport struct {
	configErr error             // CONFIG GET failed (disabled or renamed)
	config    map[string]string // the values CONFIG GET returned
	info      map[string]string // INFO fields
}

func inspectNode(ctx context.Context, c redis.Cmdable) (nodeReport, error) {
	r := nodeReport{config: map[string]string{}, info: map[string]string{}}
	for _, p := range []string{"maxmemory-policy", "appendonly", "save", "min-replicas-to-write", "min-replicas-max-lag"} {
		vals, err := c.ConfigGet(ctx, p).Result()
		if err != nil {
			var re redis.Error
			if !errors.As(err, &re) {
				return r, err // the server is away; not a configuration answer
			}
			r.configErr = err
			break
		}
		if v, ok := vals[p]; ok {
			r.config[p] = v
		}
	}
	info, err := c.Info(ctx, "server", "persistence", "memory", "stats", "replication").Result()
	if err != nil {
		var re redis.Error
		if !errors.As(err, &re) {
			return r, err
		}
		return r, nil
	}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && !strings.HasPrefix(k, "#") {
			r.info[k] = v
		}
	}
	return r, nil
}

// judge turns the node reports into checks and the refusal, if any.
func judge(nodes []nodeReport, s Settings) (PreflightReport, error) {
	rep := PreflightReport{Details: map[string]string{}}
	var refusal *contract.PreflightError
	refuse := func(setting, value, fix string) {
		rep.Checks = append(rep.Checks, contract.HealthCheck{Name: setting, Value: value, Status: contract.HealthFail, Fix: fix})
		if refusal == nil {
			refusal = &contract.PreflightError{Setting: setting, Value: value, Fix: fix}
		}
	}
	ok := func(setting, value string) {
		rep.Checks = append(rep.Checks, contract.HealthCheck{Name: setting, Value: value, Status: contract.HealthOK})
	}
	warn := func(setting, value, fix string) {
		rep.Checks = append(rep.Checks, contract.HealthCheck{Name: setting, Value: value, Status: contract.HealthWarn, Fix: fix})
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, k := range []string{"redis_version", "used_memory_human", "maxmemory_human", "evicted_keys", "aof_enabled", "rdb_last_bgsave_status", "aof_last_write_status", "loading"} {
			if v, ok := n.info[k]; ok && rep.Details[k] == "" {
				rep.Details[k] = v
			}
		}
		policy, hasPolicy := n.config["maxmemory-policy"]
		if n.configErr != nil || !hasPolicy {
			if seen["config"] {
				continue
			}
			seen["config"] = true
			value := "unavailable"
			if s.AssumeDurable {
				warn("CONFIG", value, "Settings.AssumeDurable is set: eviction and persistence were not checked")
			} else {
				refuse("CONFIG", value, fixAssumeDurable)
			}
			continue
		}
		key := policy
		if !seen["policy:"+key] {
			seen["policy:"+key] = true
			if strings.HasPrefix(policy, "allkeys-") || policy == "volatile-ttl" {
				refuse("maxmemory-policy", policy, "eviction would drop runs and items mid-flight; set maxmemory-policy to noeviction (or volatile-lru: no key here carries a TTL)")
			} else {
				ok("maxmemory-policy", policy)
			}
		}
		aof, save := n.config["appendonly"], n.config["save"]
		value := "appendonly " + aof + ", save \"" + save + "\""
		if seen["persist:"+value] {
			continue
		}
		seen["persist:"+value] = true
		switch {
		case aof == "yes" || strings.TrimSpace(save) != "":
			ok("persistence", value)
		case !s.Volatile:
			refuse("persistence", value, "a restart would lose every run and item; turn on appendonly yes (or RDB save points), or set Settings.Volatile for work that can be recreated")
		default:
			warn("persistence", value, "Settings.Volatile is set: a restart loses everything; fine for dev and recreatable work only")
		}
	}
	for _, n := range nodes {
		if c, ok := replication(rep.Details, n, s); ok && !seen["replication:"+c.Value+c.Fix] {
			seen["replication:"+c.Value+c.Fix] = true
			rep.Checks = append(rep.Checks, c)
		}
	}
	if n := rep.Details["evicted_keys"]; n != "" && n != "0" {
		warn("evicted_keys", n, "the server has evicted keys since it started; check that maxmemory-policy has always been safe")
	}
	if refusal != nil {
		return rep, refusal
	}
	return rep, nil
}

// replication returns the replication check of node n (false when the
// server hid INFO: nothing to judge) and records its facts in details.
func replication(details map[string]string, n nodeReport, s Settings) (contract.HealthCheck, bool) {
	role := n.info["role"]
	if role == "" {
		return contract.HealthCheck{}, false
	}
	replicas, _ := strconv.Atoi(n.info["connected_slaves"])
	minRep, _ := strconv.Atoi(n.config["min-replicas-to-write"])
	lag := n.config["min-replicas-max-lag"]
	details["role"] = role
	details["connected replicas"] = strconv.Itoa(replicas)
	if v, ok := n.config["min-replicas-to-write"]; ok {
		details["min-replicas-to-write"] = v
		details["min-replicas-max-lag"] = lag
	}
	value := fmt.Sprintf("role %s, %d connected replica(s), min-replicas-to-write %d", role, replicas, minRep)
	if minRep > 0 {
		value += " (max lag " + lag + "s)"
	}
	if s.WaitReplicas > 0 {
		value += fmt.Sprintf(", Settings.WaitReplicas %d", s.WaitReplicas)
	}
	check := contract.HealthCheck{Name: "replication", Value: value, Status: contract.HealthOK}
	switch {
	case role != "master":
		check.Status, check.Fix = contract.HealthWarn, "the client reached a replica, which refuses writes (READONLY); point it at the master, or reach it through Sentinel (redis.NewFailoverClient)"
	case s.WaitReplicas > replicas:
		check.Status, check.Fix = contract.HealthWarn, fmt.Sprintf("Settings.WaitReplicas asks every write to reach %d replicas but %d are connected: each write will wait Settings.WaitTimeout and fail; connect the replicas or lower Settings.WaitReplicas", s.WaitReplicas, replicas)
	case replicas > 0 && s.WaitReplicas == 0 && minRep == 0:
		check.Status, check.Fix = contract.HealthWarn, "replication is asynchronous: a write the master acknowledged but had not yet sent on is lost when a replica is promoted after a crash; "+
			"set Settings.WaitReplicas (each write waits for the replicas) or min-replicas-to-write with min-replicas-max-lag (bounds the loss to that lag); see docs/deploying.md"
	}
	return check, true
}
