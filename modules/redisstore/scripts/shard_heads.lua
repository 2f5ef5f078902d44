-- Lists a shard's tenants with due work for a sharded claim that has no
-- share to ask of it (shardHeads in shard_lib.lua). Reads only.
--
-- KEYS[1] ROT   KEYS[2] WAIT   KEYS[3] TURNS   KEYS[4] WAITS   KEYS[5] LIFE
-- ARGV[1] now (us)   ARGV[2] most tenants listed
return shardHeads(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], tonumber(ARGV[2]))
