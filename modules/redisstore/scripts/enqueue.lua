-- Adds items to one queue. An item whose id is queued, leased or dead is
-- left as it is, so a repeated enqueue is harmless. Items are grouped by
-- tenant so each tenant's ready set and place are written once.
--
-- ARGV[3] wake channel   ARGV[4] now (us)   ARGV[5] now (ns)   ARGV[6] queue name
-- then per item: tenant, id, payload, metadata (JSON), due (us), not-before (ns or '')
-- Returns how many items were added.
local now = tonumber(ARGV[4])
local seq = tonumber(redis.call('GET', Q .. 'seq') or '0')
local groups, order = {}, {}
local added, wake = 0, false
for i = 7, #ARGV, 6 do
  local t, id = ARGV[i], ARGV[i + 1]
  local ref = lp(t) .. lp(id)
  local m = string.format('%016x', seq + 1) .. ref
  local rec = encode({s = 'q', a = '0', nb = ARGV[i + 5], ea = ARGV[5], m = m, t = t, i = id, md = ARGV[i + 3], p = ARGV[i + 2]})
  if redis.call('HSETNX', ITEMS, ref, rec) == 1 then
    seq = seq + 1
    local g = groups[t]
    if not g then
      g = {}
      groups[t] = g
      order[#order + 1] = t
    end
    g[#g + 1] = ARGV[i + 4]
    g[#g + 1] = m
    added = added + 1
    if tonumber(ARGV[i + 4]) <= now then
      wake = true
    end
  end
end
if added == 0 then
  return 0
end
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
