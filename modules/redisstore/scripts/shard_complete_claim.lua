-- A shard's complete-and-claim in a sharded queue: as complete_claim.lua,
-- then the shard's tenants with due work (shardHeads in shard_lib.lua, at
-- most 256). Returns {completeClaim's reply, the heads}.
return {completeClaim(), shardHeads(ROT, WAIT, TURNS, WAITS, LIFE, ARGV[1], 256)}
