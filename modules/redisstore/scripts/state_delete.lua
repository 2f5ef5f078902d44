-- Removes a run and its index entries.
--
-- KEYS[1] run blob   KEYS[2] run hash   KEYS[3] tenant index
-- KEYS[4] applied patches
-- ARGV[1] tenant key prefix   ARGV[2] run id
-- Returns 1 when deleted, 0 when missing.
local function lp(s) return #s .. ':' .. s end
local session = redis.call('HGET', KEYS[2], 'se')
if not session then
  return 0
end
if session ~= '' then
  redis.call('ZREM', ARGV[1] .. 'session:' .. lp(session), ARGV[2])
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
