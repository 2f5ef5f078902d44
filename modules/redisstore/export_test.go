package redisstore

// ShardOf is shardOf, for the external tests: the shard of tenant in a
// queue of n shards.
var ShardOf = shardOf
