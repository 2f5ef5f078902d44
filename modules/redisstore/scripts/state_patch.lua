-- Adds counter deltas to a run and optionally sets its status. HINCRBY
-- inside one script: concurrent patches all land and each bumps the
-- version, so a put holding an older version is refused.
--
-- KEYS[1] run blob   KEYS[2] run hash
-- ARGV[1..5] deltas: input tokens, output tokens, cost, iterations, cursor
-- ARGV[6] status ('' keeps it)   ARGV[7] now (unix ns)
-- ARGV[8] nonce of this call (16 hex digits). The last 16 nonces are kept
-- in the hash, so a retry of a patch that landed (its reply was lost)
-- is not added twice.
-- Returns {} when the run does not exist, or {hash fields..., data}.
local pn = redis.call('HGET', KEYS[2], 'pn')
if not pn then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return {}
  end
  pn = ''
end
if string.find(pn, ARGV[8], 1, true) then
  local out = redis.call('HGETALL', KEYS[2])
  table.insert(out, redis.call('GET', KEYS[1]) or '')
  return out
end
local fields = {'it', 'ot', 'c', 'i', 'cur'}
for n, f in ipairs(fields) do
  if ARGV[n] ~= '0' then
    redis.call('HINCRBY', KEYS[2], f, ARGV[n])
  end
end
redis.call('HINCRBY', KEYS[2], 'v', 1)
redis.call('HSET', KEYS[2], 'ua', ARGV[7], 'pn', ARGV[8] .. string.sub(pn, 1, 16 * 15))
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[2], 'st', ARGV[6])
end
local out = redis.call('HGETALL', KEYS[2])
table.insert(out, redis.call('GET', KEYS[1]) or '')
return out
