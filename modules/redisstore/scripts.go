package redisstore

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

func loadScript(name string) *redis.Script {
	src, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("redisstore: missing embedded script " + name) // a build error, not a runtime one
	}
	return redis.NewScript(string(src))
}

// The scripts run by SHA (EVALSHA, falling back to EVAL once per server
// that has not cached them). They are package values because they are
// constants: the source is fixed at build time.
var (
	scriptStateGet  = loadScript("state_get")
	scriptStateList = loadScript("state_list")
)

// Queue scripts share a prelude (key names, the rotation helpers and the
// history helpers), kept in scripts/queue_lib.lua and history_lib.lua and
// prepended when the script is built.
func loadQueueScript(name string, libs ...string) *redis.Script {
	return loadWith(name, append([]string{"record_lib", "queue_lib", "history_lib"}, libs...)...)
}

// loadWith builds script name from the function libraries libs (files of
// scripts/ that only define locals) followed by its own body, so that
// scripts running the same step share one copy of its Lua.
func loadWith(name string, libs ...string) *redis.Script {
	var src []byte
	for _, f := range append(libs, name) {
		b, err := scriptFS.ReadFile("scripts/" + f + ".lua")
		if err != nil {
			panic("redisstore: missing embedded script " + f) // a build error, not a runtime one
		}
		src = append(append(src, b...), '\n')
	}
	return redis.NewScript(string(src))
}

// The state write scripts share their replay records and fences
// (state_lib.lua) and the versions they keep (state_versions_lib.lua);
// both use state_int64.lua's exact decimal comparisons, and the patch its
// exact int64 sums.
var (
	scriptStatePut    = loadWith("state_put", "state_int64", "state_lib", "state_versions_lib")
	scriptStatePatch  = loadWith("state_patch", "state_int64", "state_lib", "state_versions_lib")
	scriptStateDelete = loadWith("state_delete", "state_int64", "state_lib")
	scriptStateFork   = loadWith("state_fork", "state_int64", "state_lib", "state_versions_lib")

	scriptVersionGet  = loadWith("state_version_get", "state_int64", "state_versions_lib")
	scriptVersionList = loadWith("state_version_list", "state_int64", "state_versions_lib")
)

// flow_lib holds the flow-control encodings and checks (limits rows, rate
// buckets, budget slots, the live-lease index) for every script that
// reads or keeps them.
var (
	scriptEnqueue   = loadQueueScript("enqueue")
	scriptClaim     = loadQueueScript("claim", "flow_lib", "claim_lib")
	scriptHeartbeat = loadQueueScript("heartbeat", "flow_lib", "lifecycle_lib")
	scriptSettle    = loadQueueScript("settle", "flow_lib", "lifecycle_lib")
	scriptReapScan  = loadQueueScript("reap_scan", "flow_lib")
	scriptDeadPage  = loadQueueScript("dead_page")
	scriptDeadMove  = loadQueueScript("dead_move")
	scriptComplete  = loadWith("complete", "record_lib", "flow_lib", "history_lib", "complete_lib")
	// complete_claim runs the complete step, then the claim step.
	scriptCompleteClaim = loadQueueScript("complete_claim", "flow_lib", "complete_lib", "claim_lib", "complete_claim_lib")

	// A sharded queue's shards claim with their due tenants appended
	// (shard_lib.lua); a shard given no share lists them alone.
	scriptShardClaim         = loadQueueScript("shard_claim", "flow_lib", "claim_lib", "shard_lib")
	scriptShardCompleteClaim = loadQueueScript("shard_complete_claim", "flow_lib", "complete_lib", "claim_lib", "complete_claim_lib", "shard_lib")
	scriptShardHeads         = loadWith("shard_heads", "shard_lib")

	scriptSetLimits  = loadQueueScript("set_limits", "flow_lib")
	scriptCharge     = loadQueueScript("charge", "flow_lib")
	scriptFlowStatus = loadQueueScript("flow_status", "flow_lib")
)

// The lifecycle scripts (lifecycle.go).
var (
	scriptPause          = loadQueueScript("pause", "lifecycle_lib")
	scriptCancel         = loadQueueScript("cancel", "lifecycle_lib")
	scriptPark           = loadQueueScript("park", "lifecycle_lib")
	scriptSignal         = loadQueueScript("signal")
	scriptPurgeCancelled = loadQueueScript("purge_cancelled")
)

// The history scripts (history.go).
var (
	scriptSetRetention = loadQueueScript("set_retention", "lifecycle_lib")
	scriptPrune        = loadQueueScript("prune")
	scriptQueueEvents  = loadScript("queue_events")
)
