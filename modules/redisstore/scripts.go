package redisstore

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

func loadScript(name string) *script {
	return loadWith(name)
}

// The scripts are package values because they are constants: the source
// is fixed at build time.
var (
	scriptStateGet  = loadScript("state_get")
	scriptStateList = loadScript("state_list")
)

// Queue scripts share a prelude (key names, the rotation helpers and the
// history helpers), kept in scripts/queue_lib.lua and history_lib.lua and
// prepended when the script is built.
func loadQueueScript(name string, libs ...string) *script {
	return loadWith(name, append([]string{"record_lib", "queue_lib", "history_lib"}, libs...)...)
}

// loadWith builds script name from the function libraries libs (files of
// scripts/ that only define locals) followed by its own body, so that
// scripts running the same step share one copy of its Lua.
func loadWith(name string, libs ...string) *script {
	read := func(f string) string {
		b, err := scriptFS.ReadFile("scripts/" + f + ".lua")
		if err != nil {
			panic("redisstore: missing embedded script " + f) // a build error, not a runtime one
		}
		return string(b)
	}
	var src strings.Builder
	parts := make([]string, 0, len(libs))
	for _, f := range libs {
		parts = append(parts, read(f))
		src.WriteString(parts[len(parts)-1] + "\n")
	}
	body := read(name)
	src.WriteString(body + "\n")
	sc := &script{Script: redis.NewScript(src.String())}
	sc.readOnly = readOnlyScripts[name]
	flags := []string{"allow-oom"}
	switch {
	case sc.readOnly:
		flags = []string{"no-writes"}
	case growingScripts[name]:
		flags = nil
	}
	// The function's name changes with its flags as with its source: a
	// server holding the library under the name keeps the flags it was
	// loaded with.
	sum := sha1.Sum([]byte(src.String() + "\x00flags=" + strings.Join(flags, ",")))
	sc.fn = "adk_" + name + "_" + hex.EncodeToString(sum[:])[:16]
	sc.lib = functionLibrary(sc.fn, parts, body, flags)
	if len(flags) > 0 {
		sc.flagged = redis.NewScript("#!lua flags=" + strings.Join(flags, ",") + "\n" + src.String())
	}
	allScripts = append(allScripts, sc)
	return sc
}

// allScripts are the scripts loadWith built, in the order it built them.
var allScripts []*script

// readOnlyScripts are the scripts that never write: no WAIT after them,
// and their functions carry the no-writes flag.
var readOnlyScripts = map[string]bool{"dead_page": true, "state_get": true, "state_list": true}

// growingScripts are the scripts that add data: new items, run state, a
// signal's payload. A server out of memory (maxmemory reached, no
// eviction) refuses their functions before they run, as it refuses
// those of every other script unless they carry the allow-oom flag,
// which every other writing script does: claiming, settling, reaping,
// pruning and cancelling are what drain a full server, and Redis would
// otherwise stop all of them too. A script run by EVALSHA carries the
// same flags in a shebang line. (Before Redis 7 a script can carry none,
// and a full server refuses it at its first write of a command that may
// use memory, which for most writing scripts comes early: such a server
// drains only partly.)
var growingScripts = map[string]bool{"enqueue": true, "state_put": true, "state_patch": true, "state_fork": true, "signal": true}

// script is one of the package's Lua scripts. It runs as a Redis
// function (FCALL of fn, from the library lib, loaded on a server the
// first time a call finds it missing) where the server has functions
// (Redis 7) and lets the store load them; otherwise by EVALSHA, falling
// back to EVAL once per server that has not cached it.
//
// A function's library is loaded once, so the helpers the libraries
// define are made once per server; a script run by EVALSHA makes them
// all again on every call, which costs more than most calls' own work
// (about 16 µs for the claim's, against 1 µs for an FCALL that returns
// at once).
type script struct {
	*redis.Script
	fn       string // the function's name (and its library's): adk_<script>_<hash>
	lib      string // the library's source, for FUNCTION LOAD
	readOnly bool
	// flagged is the script with its function's flags (a shebang line,
	// Redis 7): what runs by EVALSHA, and a call whose function a full
	// server would not load; nil for a script without flags.
	flagged *redis.Script
}

// functionLibrary returns the source of a Redis function library that
// registers fn, doing what the script of libs and body does.
//
// A library's top level runs once, when it is loaded, and without the
// call's keys and arguments (or most of the standard library); what a
// lib computes at its top level from KEYS and ARGV, and the state a call
// changes (the claim's flags, the history's caches), must instead be
// made at the start of each call. So each top-level statement of a lib
// that is not a function (a local with a value) is split: the local is
// declared where it stood, so the helpers below it see it, and its value
// is assigned by the lib's init function, which the call runs first, in
// the libs' order. A statement that assigns a local declared apart
// ("local T" then "T = {}") is not split: it runs once, at the load, and
// its value is kept from call to call, which a lib uses for constants and
// for memos that hold nothing of any call (record_lib.lua's field lists
// and number strings). KEYS and ARGV are locals of the library, set from
// the call's keys and arguments; the body runs as the function itself,
// with flags (none when empty).
func functionLibrary(fn string, libs []string, body string, flags []string) string {
	var b, calls strings.Builder
	b.WriteString("#!lua name=" + fn + "\nlocal KEYS, ARGV\n")
	for i, lib := range libs {
		decl, init := splitTopLevel(lib)
		b.WriteString(decl + "\n")
		if init == "" {
			continue
		}
		name := fmt.Sprintf("adkInit%d", i)
		b.WriteString("local function " + name + "()\n" + init + "end\n")
		calls.WriteString(name + "()\n")
	}
	list := ""
	if len(flags) > 0 {
		list = ", flags = {'" + strings.Join(flags, "', '") + "'}"
	}
	b.WriteString("redis.register_function{function_name = '" + fn + "', callback = function(keys, args)\nKEYS, ARGV = keys, args\n" +
		calls.String() + body + "\nend" + list + "}\n")
	return b.String()
}

// splitTopLevel splits a lib's source into its declarations (the source
// with every top-level "local a, b = value" statement cut to "local a,
// b") and the assignments it cut ("a, b = value", in order). A top-level
// statement starts at a line's first column with "local " (not "local
// function") and runs on over the indented lines that follow it.
func splitTopLevel(src string) (decl, init string) {
	lines := strings.Split(src, "\n")
	var d, in strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "local ") || strings.HasPrefix(l, "local function ") {
			d.WriteString(l + "\n")
			continue
		}
		stmt := l
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") {
			i++
			stmt += "\n" + lines[i]
		}
		names, value, ok := strings.Cut(strings.TrimPrefix(stmt, "local "), " = ")
		if !ok {
			d.WriteString(stmt + "\n")
			continue
		}
		d.WriteString("local " + strings.Join(strings.Fields(names), " ") + "\n")
		in.WriteString(names + " = " + value + "\n")
	}
	return d.String(), in.String()
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
