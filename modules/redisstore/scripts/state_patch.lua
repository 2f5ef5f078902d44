-- Adds counter deltas to a run and optionally sets its status. HINCRBY
-- inside one script: concurrent patches all land and each bumps the
-- version, so a put holding an older version is refused.
--
-- KEYS[1] run blob   KEYS[2] run hash   KEYS[3] applied patches (sorted set)
-- ARGV[1..5] deltas: input tokens, output tokens, cost, iterations, cursor
-- ARGV[6] status ('' keeps it)   ARGV[7] now (unix ns)
-- ARGV[8] nonce of this call (16 hex digits)   ARGV[9] now (unix ms)
-- ARGV[10] replay window (ms)
--
-- A retry of a patch whose reply was lost carries the same nonce. The
-- nonces applied within the replay window are kept, scored by when they
-- landed, so the retry finds its nonce however many other patches landed
-- in between, and is answered without being added twice. Remembering a
-- count of nonces instead would forget one on a busy run.
-- Returns {} when the run does not exist, or {hash fields..., data}.
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {}
end
if not redis.call('ZSCORE', KEYS[3], ARGV[8]) then
  local fields = {'it', 'ot', 'c', 'i', 'cur'}
  for n, f in ipairs(fields) do
    if ARGV[n] ~= '0' then
      redis.call('HINCRBY', KEYS[2], f, ARGV[n])
    end
  end
  redis.call('HINCRBY', KEYS[2], 'v', 1)
  redis.call('HSET', KEYS[2], 'ua', ARGV[7])
  if ARGV[6] ~= '' then
    redis.call('HSET', KEYS[2], 'st', ARGV[6])
  end
  local now = tonumber(ARGV[9])
  redis.call('ZADD', KEYS[3], now, ARGV[8])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - tonumber(ARGV[10])))
end
local out = redis.call('HGETALL', KEYS[2])
table.insert(out, redis.call('GET', KEYS[1]) or '')
return out
