-- Writes a run's session, status and data if the caller holds the stored
-- version (0 creates). The version check and the write are one step, so
-- two workers holding the same version cannot both win.
--
-- KEYS[1] run blob   KEYS[2] run hash   KEYS[3] tenant index (zset by seq)
-- KEYS[4] tenant seq counter
-- ARGV[1] tenant key prefix (for session index keys)
-- ARGV[2] expected version   ARGV[3] run id   ARGV[4] session
-- ARGV[5] status   ARGV[6] data   ARGV[7] now (unix ns)
-- ARGV[8] nonce of this call: a retry of a put that landed (its reply was
-- lost) finds its own nonce and returns the run instead of a conflict.
-- Returns {0, stored version} on conflict, or {1, hash fields..., data}.
local function lp(s) return #s .. ":" .. s end

local expected = tonumber(ARGV[2])
local stored = redis.call('HGET', KEYS[2], 'v')
if stored and redis.call('HGET', KEYS[2], 'wn') == ARGV[8] then
  local out = redis.call('HGETALL', KEYS[2])
  table.insert(out, 1, 1)
  table.insert(out, redis.call('GET', KEYS[1]) or '')
  return out
end
local actual = stored and tonumber(stored) or 0
if stored and expected == 0 then
  return {0, actual}
end
if expected ~= actual then
  return {0, actual}
end

local id, session = ARGV[3], ARGV[4]
if not stored then
  local seq = redis.call('INCR', KEYS[4])
  redis.call('HSET', KEYS[2], 'v', 1, 'seq', seq, 'it', 0, 'ot', 0, 'c', 0, 'i', 0, 'cur', 0,
    'ca', ARGV[7], 'ua', ARGV[7], 'st', ARGV[5], 'se', session, 'wn', ARGV[8])
  redis.call('ZADD', KEYS[3], seq, id)
  if session ~= '' then
    redis.call('ZADD', ARGV[1] .. 'session:' .. lp(session), seq, id)
  end
else
  local old = redis.call('HGET', KEYS[2], 'se') or ''
  local seq = redis.call('HGET', KEYS[2], 'seq')
  if old ~= session then
    if old ~= '' then
      redis.call('ZREM', ARGV[1] .. 'session:' .. lp(old), id)
    end
    if session ~= '' then
      redis.call('ZADD', ARGV[1] .. 'session:' .. lp(session), seq, id)
    end
  end
  redis.call('HINCRBY', KEYS[2], 'v', 1)
  redis.call('HSET', KEYS[2], 'ua', ARGV[7], 'st', ARGV[5], 'se', session, 'wn', ARGV[8])
end
redis.call('SET', KEYS[1], ARGV[6])

local out = redis.call('HGETALL', KEYS[2])
table.insert(out, 1, 1)
table.insert(out, ARGV[6])
return out
