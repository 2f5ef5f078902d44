package redisstore

// ShardOf is shardOf, for the external tests: the shard of tenant in a
// queue of n shards.
var ShardOf = shardOf

// ScriptLibraries returns the function name and library source of every
// script, for the external tests.
func ScriptLibraries() (names, libs []string) {
	for _, sc := range allScripts {
		names, libs = append(names, sc.fn), append(libs, sc.lib)
	}
	return names, libs
}
