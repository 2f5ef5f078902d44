-- Adds items to one queue. An item whose id is queued, leased or dead is
-- left as it is, so a repeated enqueue is harmless. Items are grouped by
-- tenant so each tenant's ready set and place are written once.
--
-- ARGV[3] wake channel   ARGV[4] now (us)   ARGV[5] now (ns)   ARGV[6] queue name
-- then per item: tenant, ref, the record encoded up to its last field
-- (the ready member, appended here), due (us).
-- Returns how many items were added.
local now = tonumber(ARGV[4])
local seq = tonumber(redis.call('GET', Q .. 'seq') or '0')
local groups, order = {}, {}
local added, wake = 0, false
-- Which items exist already: one HMGET for the batch (and a table for ids
-- repeated within it), then one HSET of the new records.
local refs = {}
for i = 7, #ARGV, 4 do
  refs[#refs + 1] = ARGV[i + 1]
end
local have = redis.call('HMGET', ITEMS, unpack(refs))
local seen, recs = {}, {}
for k, ref in ipairs(refs) do
  if not have[k] and not seen[ref] then
    seen[ref] = true
    local i = 7 + 4 * (k - 1)
    local t = ARGV[i]
    seq = seq + 1
    local m = string.format('%016x', seq) .. ref
    recs[#recs + 1] = ref
    recs[#recs + 1] = ARGV[i + 2] .. #m .. ':' .. m
    local g = groups[t]
    if not g then
      g = {}
      groups[t] = g
      order[#order + 1] = t
    end
    g[#g + 1] = ARGV[i + 3]
    g[#g + 1] = m
    added = added + 1
    if tonumber(ARGV[i + 3]) <= now then
      wake = true
    end
  end
end
if added == 0 then
  return 0
end
redis.call('HSET', ITEMS, unpack(recs))
redis.call('SET', Q .. 'seq', seq)
for _, t in ipairs(order) do
  local rk = kready(t)
  if redis.call('ZCARD', rk) == 0 then
    -- No queued work until now: the tenant joins at the back.
    redis.call('HSET', TURNS, t, redis.call('INCR', Q .. 'turn'))
  end
  redis.call('ZADD', rk, unpack(groups[t]))
  if not redis.call('ZSCORE', ROT, t) then
    redis.call('ZREM', WAIT, t)
    place(t, now)
  end
end
redis.call('SADD', Q .. 'tenants', unpack(order))
redis.call('SADD', NS .. 'queues', ARGV[6])
if wake then
  redis.call('PUBLISH', ARGV[3], '1')
end
return added
