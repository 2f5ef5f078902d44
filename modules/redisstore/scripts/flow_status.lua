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
  for _, t in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if t ~= '' then
      queued[#queued + 1] = t
    end
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
local lv = redis.call('HGETALL', LEASE)
for j = 1, #lv, 2 do
  local ref, l = lv[j], lease(lv[j + 1])
  if ref ~= '' and l then
    local lt = tenantOfRef(ref)
    if not count[lt] then
      count[lt], live[lt] = 0, 0
      order[#order + 1] = lt
    end
    count[lt] = count[lt] + 1
    if tonumber(l.x) > now then
      live[lt] = live[lt] + 1
    end
  end
end
local leased = {}
for _, lt in ipairs(order) do
  leased[#leased + 1] = lt
  leased[#leased + 1] = count[lt]
  leased[#leased + 1] = live[lt]
end
return {redis.call('HGETALL', LIMITS), redis.call('HGETALL', FSTATE), queued, leased}
