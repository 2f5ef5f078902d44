-- Leases up to max due items of one queue in tenant rotation: the tenant
-- at the head of the rotation gives its first due item and goes to the
-- back, round after round, until the batch is full or no tenant has a due
-- item. Moving the item to the lease set and writing its record happen in
-- this one script, so there is no window in which an item is leased but
-- still says it is queued.
--
-- ARGV[3] now (us)   ARGV[4] now (ns)   ARGV[5] expiry (us)   ARGV[6] expiry (ns)
-- ARGV[7] worker   ARGV[8] max   ARGV[9] how many turns the log keeps
-- Returns a list of {token, record fields...}.
local now = tonumber(ARGV[3])

-- Tenants whose delayed items fell due rejoin the rotation at their stamp.
local woke = redis.call('ZRANGE', WAIT, '-inf', ARGV[3], 'BYSCORE')
for _, t in ipairs(woke) do
  redis.call('ZREM', WAIT, t)
  place(t, now)
end

local max = tonumber(ARGV[8])
local taken = {}
local served = {}
while #taken < max do
  local head = redis.call('ZRANGE', ROT, 0, 0)
  if #head == 0 then
    break
  end
  local t = head[1]
  local rk = kready(t)
  redis.call('ZREM', ROT, t)
  local due = redis.call('ZRANGE', rk, '-inf', ARGV[3], 'BYSCORE', 'LIMIT', 0, 1)
  if #due > 0 then
    local m = due[1]
    redis.call('ZREM', rk, m)
    local id = string.sub(m, 17)
    local ref = lp(t) .. lp(id)
    local turn = redis.call('INCR', Q .. 'turn')
    redis.call('HSET', TURNS, t, turn)
    if redis.call('EXISTS', kitem(ref)) == 1 then
      taken[#taken + 1] = {t, id, ref}
      served[t] = (served[t] or 0) + 1
    end
  end
  -- Served or not (the clock may have gone back), the tenant goes where
  -- its next item says.
  place(t, now)
end

local n = #taken
if n == 0 then
  return {}
end
local last = redis.call('INCRBY', NS .. 'token', n)
local out, log = {}, {}
for k, it in ipairs(taken) do
  local tok = last - n + k
  local ik = kitem(it[3])
  redis.call('HSET', ik, 's', 'l', 'tok', tok, 'w', ARGV[7], 'x', ARGV[5], 'xn', ARGV[6])
  redis.call('ZADD', LEASES, ARGV[5], it[3])
  out[k] = {tok, redis.call('HGETALL', ik)}
  log[k] = lp(it[1]) .. lp(it[2]) .. lp(ARGV[7]) .. ARGV[4]
end
for t, c in pairs(served) do
  redis.call('HINCRBY', Q .. 'served', t, c)
end
redis.call('LPUSH', Q .. 'log', unpack(log))
redis.call('LTRIM', Q .. 'log', 0, tonumber(ARGV[9]) - 1)
return out
