-- Reads what FlowStatus reports on, writing nothing: the limits rows, the
-- flow state, the tenants with queued items (in the rotation or waiting)
-- or dead letters and, per tenant with leases, how many are leased and
-- how many are live.
--
-- ARGV[1] now (us)
-- Returns {limits (field, value, ...), flow state (field, value, ...),
-- tenants with queued or dead items, {lp(tenant), leases, live leases, ...}}.
local now = tonumber(ARGV[1])
local queued = {}
for _, key in ipairs({ROT, WAIT}) do
  for _, t in ipairs(redis.call('ZRANGE', key, '-inf', '(+inf', 'BYSCORE')) do
    queued[#queued + 1] = t
  end
end
-- Tenants with dead letters: one lex step per tenant through TDEAD
-- (after a tenant's members, which go on in hex digits, comes the next
-- tenant's first).
local from = '('
while true do
  local m = redis.call('ZRANGE', TDEAD, from, '+', 'BYLEX', 'LIMIT', 0, 1)[1]
  if not m then
    break
  end
  local lt = tenantOfRef(m)
  local c = string.find(lt, ':', 1, true)
  queued[#queued + 1] = string.sub(lt, c + 1)
  from = '(' .. lt .. 'g'
end
local count, live, order = {}, {}, {}
-- Only the expiry of each lease value is read: a batch shares one value.
local lv = redis.call('HGETALL', LEASE)
local alive = {}
for j = 1, #lv, 2 do
  local ref, v = lv[j], lv[j + 1]
  local a = alive[v]
  if a == nil then
    local x = tonumber(string.match(v, '^%d+|(%d+)|') or '')
    a = x and (x > now and 1 or 0) or false
    alive[v] = a
  end
  if ref ~= '' and a then
    local lt = tenantOfRef(ref)
    if not count[lt] then
      count[lt], live[lt] = 0, 0
      order[#order + 1] = lt
    end
    count[lt] = count[lt] + 1
    live[lt] = live[lt] + a
  end
end
local leased = {}
for _, lt in ipairs(order) do
  leased[#leased + 1] = lt
  leased[#leased + 1] = count[lt]
  leased[#leased + 1] = live[lt]
end
return {redis.call('HGETALL', LIMITS), redis.call('HGETALL', FSTATE), queued, leased}
