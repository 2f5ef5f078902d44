package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/backoff"
	"github.com/adkit/adk/modules/policy"
)

// DefaultNamespace prefixes every key when Settings.Namespace is empty.
const DefaultNamespace = "adk"

// DefaultRecentTurns is how many recent turns a queue remembers for the
// Inspector when Settings.RecentTurns is zero.
const DefaultRecentTurns = 1000

// RetryBudget bounds how long an operation waits out an outage or a
// failover: it tries again, sleeping a random fraction of a delay that
// starts at BaseDelay and doubles up to MaxDelay, until MaxElapsed has
// passed since the first try (or Attempts tries were made, when set).
// The jitter spreads workers that failed together so they do not all
// reconnect at once. The caller's context ends the wait sooner.
//
// The default MaxElapsed, 45s, is sized to ride out a Sentinel failover
// at Sentinel's defaults: the master must be unreachable for
// down-after-milliseconds (30000) before the Sentinels call it down, the
// election and the promotion of the replica then take a second or a few
// (failover-timeout, 180000, only bounds a failover that stalls), and
// the failover client finds the new master on its next dial. With other
// Sentinel settings, give MaxElapsed down-after-milliseconds plus 15s.
// A managed Redis failover (a DNS name moved to the new primary) takes
// as long as its provider says: size MaxElapsed from that.
type RetryBudget struct {
	Attempts   int           // most tries, including the first; 0 means no limit but MaxElapsed
	BaseDelay  time.Duration // 0 means 50ms
	MaxDelay   time.Duration // 0 means 2s
	MaxElapsed time.Duration // 0 means 45s
}

// Default retry budget values.
const (
	DefaultRetryBaseDelay  = 50 * time.Millisecond
	DefaultRetryMaxDelay   = 2 * time.Second
	DefaultRetryMaxElapsed = 45 * time.Second
)

// schedule begins one operation's retries under the budget (normalized):
// full jitter over the doubling delay, the elapsed time on the wall
// clock, since an injected test clock that never moves would never spend
// MaxElapsed.
func (b RetryBudget) schedule() *backoff.Schedule {
	return backoff.Budget{
		Backoff:    backoff.Backoff{Base: b.BaseDelay, Max: b.MaxDelay, Jitter: backoff.FullJitter},
		Attempts:   b.Attempts,
		MaxElapsed: b.MaxElapsed,
		Clock:      contract.SystemClock{},
	}.Start()
}

func (b RetryBudget) normalized() RetryBudget {
	if b.MaxElapsed <= 0 {
		b.MaxElapsed = DefaultRetryMaxElapsed
	}
	if b.BaseDelay <= 0 {
		b.BaseDelay = DefaultRetryBaseDelay
	}
	if b.MaxDelay <= 0 {
		b.MaxDelay = DefaultRetryMaxDelay
	}
	if b.BaseDelay > b.MaxDelay {
		b.BaseDelay = b.MaxDelay
	}
	return b
}

// Settings configure a RedisStateStore or RedisWorkQueue. The zero value is
// usable: every zero field takes its default.
type Settings struct {
	// DSN is the server address the deployment connects with. The store
	// does not dial it (it is handed a client); it is kept so tools can
	// show which server a store uses without printing the password.
	DSN contract.Secret
	// Namespace prefixes every key (default "adk"). Queues of one
	// namespace share one cluster slot unless Shards spreads them.
	// Letters, digits and "_-.:" only.
	Namespace string
	// MaxValueBytes caps a run's Data and an item's Payload (default
	// contract.DefaultMaxValueBytes). Larger values are refused before
	// anything is sent.
	MaxValueBytes int
	// Runs says how the state store treats fences and versions of runs
	// (contract.RunPolicy); the zero value keeps no versions and lets
	// unfenced writes land.
	Runs contract.RunPolicy
	// Volatile lets Preflight accept a server that keeps nothing on disk
	// (no AOF, no RDB save points): for development, and for a queue
	// whose work can be recreated elsewhere. It is the "not durable"
	// switch, so that the zero Settings are the safe ones: by default a
	// server without persistence is refused.
	Volatile bool
	// AssumeDurable skips the checks Preflight cannot make because the
	// server hides CONFIG (managed Redis). Set it only after confirming
	// eviction and persistence with the provider.
	AssumeDurable bool
	// RetryBudget bounds the wait for a failover (default: long enough
	// for a Sentinel failover at Sentinel's default settings; see
	// RetryBudget).
	RetryBudget RetryBudget
	// WaitReplicas, when above zero, makes every write (each script that
	// changes a run or an item) wait until that many replicas have
	// acknowledged it: a WAIT in the same round trip, for at most
	// WaitTimeout. Redis replicates asynchronously, so without it a write
	// the master acknowledged but had not yet sent on is lost when a
	// replica is promoted (a Sentinel or managed failover after a crash).
	// A write fewer replicas acknowledged in time fails with a
	// *ReplicaWaitError (see there for what to do). Each write then costs
	// a replica's round trip more. Only a *redis.Client (standalone, or
	// Sentinel's failover client) can be used with it; on a cluster, set
	// min-replicas-to-write on the masters (docs/deploying.md). WAIT does
	// not make Redis strongly consistent: a promoted replica that had not
	// acknowledged a write (with more replicas than WaitReplicas) can
	// still lose it.
	WaitReplicas int
	// WaitTimeout bounds each WAIT (default 1s).
	WaitTimeout time.Duration
	// Policy decides retries and dead letters (queue only).
	Policy policy.Policy
	// RecentTurns is how many turns the claim script logs for the
	// Inspector (default 1000, at most 100000).
	RecentTurns int
	// Shards splits every queue of the namespace over that many hash tags
	// (default 1, at most MaxShards), so that on a Redis Cluster one
	// queue is served by several masters. A tenant belongs to one shard
	// (a stable hash of its name), so its items, its place in the
	// rotation and its limits stay in one slot and every script stays
	// single-slot; a claim takes from the shards, least recently served
	// tenants first, so fairness holds across shards. One shard is
	// the layout of a queue without this setting. Every process of a
	// deployment must use the same Shards, and changing it is a change of
	// layout: the queue's keys and each tenant's shard move, so drain the
	// queues first (queue only; the state store is keyed by tenant
	// already).
	Shards int
	// Scripts is how the store runs its Lua: ScriptsFunctions (the
	// default) or ScriptsEval.
	Scripts ScriptMode
}

// ScriptMode is how a store runs its Lua scripts (Settings.Scripts).
type ScriptMode string

const (
	// ScriptsFunctions, the default, runs each script as a Redis function
	// (FCALL), loading its library (FUNCTION LOAD) on a server the first
	// time a call finds it missing. A library's helpers are then built
	// once per server instead of on every call, which is most of the
	// server's time in a short call. A server that refuses to load a
	// function (one before Redis 7, or an ACL user without +function)
	// turns the store to ScriptsEval by itself. The libraries are named
	// adk_<script>_<hash>: a release adds its own and leaves those of
	// earlier ones, which FUNCTION DELETE removes once no process runs
	// them.
	ScriptsFunctions ScriptMode = "functions"
	// ScriptsEval runs each script by EVALSHA (EVAL once per server that
	// has not cached it), as releases before functions did, with its
	// function's flags in a shebang line where the server reads one
	// (Redis 7 and later).
	ScriptsEval ScriptMode = "eval"
)

// MaxShards is the most shards Settings.Shards may ask for.
const MaxShards = 64

func (s Settings) normalized() (Settings, error) {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	if err := validateNamespace(s.Namespace); err != nil {
		return s, err
	}
	switch {
	case s.MaxValueBytes == 0:
		s.MaxValueBytes = contract.DefaultMaxValueBytes
	case s.MaxValueBytes < 0 || s.MaxValueBytes > 512<<20:
		return s, &contract.ValidationError{Field: "Settings.MaxValueBytes", Problem: fmt.Sprintf("is %d; give 1 to %d bytes, or 0 for the default", s.MaxValueBytes, 512<<20)}
	}
	if err := contract.ValidateRunPolicy("Settings.Runs", s.Runs); err != nil {
		return s, err
	}
	switch {
	case s.RecentTurns == 0:
		s.RecentTurns = DefaultRecentTurns
	case s.RecentTurns < 0 || s.RecentTurns > 100000:
		return s, &contract.ValidationError{Field: "Settings.RecentTurns", Problem: fmt.Sprintf("is %d; give 1 to 100000, or 0 for the default", s.RecentTurns)}
	}
	switch {
	case s.Shards == 0:
		s.Shards = 1
	case s.Shards < 0 || s.Shards > MaxShards:
		return s, &contract.ValidationError{Field: "Settings.Shards", Problem: fmt.Sprintf("is %d; give 1 to %d shards per queue (one per Redis Cluster master is the usual choice), or 0 for one", s.Shards, MaxShards)}
	}
	switch s.Scripts {
	case "":
		s.Scripts = ScriptsFunctions
	case ScriptsFunctions, ScriptsEval:
	default:
		return s, &contract.ValidationError{Field: "Settings.Scripts", Problem: fmt.Sprintf("is %q; give %q, %q, or leave it empty for functions", string(s.Scripts), ScriptsFunctions, ScriptsEval)}
	}
	s.RetryBudget = s.RetryBudget.normalized()
	switch {
	case s.WaitReplicas < 0 || s.WaitReplicas > 100:
		return s, &contract.ValidationError{Field: "Settings.WaitReplicas", Problem: fmt.Sprintf("is %d; give the number of replicas each write must reach (1 to 100), or 0 to not wait", s.WaitReplicas)}
	case s.WaitTimeout < 0:
		return s, &contract.ValidationError{Field: "Settings.WaitTimeout", Problem: fmt.Sprintf("is %v; give a positive duration, or 0 for the default (1s)", s.WaitTimeout)}
	case s.WaitTimeout == 0:
		s.WaitTimeout = DefaultWaitTimeout
	}
	return s, nil
}

func validateNamespace(ns string) error {
	if len(ns) > 64 {
		return &contract.ValidationError{Field: "Settings.Namespace", Problem: "is longer than 64 bytes; use a short name such as \"adk\""}
	}
	for _, r := range ns {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:", r)) {
			return &contract.ValidationError{Field: "Settings.Namespace", Problem: fmt.Sprintf("contains %q; use letters, digits and \"_-.:\" only (braces would move the cluster hash tag)", r)}
		}
	}
	return nil
}
