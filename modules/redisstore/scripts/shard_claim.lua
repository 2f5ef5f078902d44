-- A shard's claim in a sharded queue: claims as claim.lua does, then
-- lists the shard's tenants with due work (shardHeads in shard_lib.lua,
-- at most 256). Returns {the claim's reply, the heads}.
return {claim(), shardHeads(ROT, WAIT, TURNS, WAITS, LIFE, ARGV[1], 256)}
