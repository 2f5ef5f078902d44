-- Lists leases that expired by now, with the token and attempts each had,
-- for the caller to put to the policy. Writes nothing except dropping a
-- lease entry that has no lease or no record left (it cannot be settled).
--
-- ARGV[1] now (us)   ARGV[2] how many
-- Returns a flat list: ref, token, attempts, score, ...
local refs = redis.call('ZRANGE', LEASES, '-inf', ARGV[1], 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
if #refs == 0 then
  return {}
end
local names = {}
for j = 1, #refs, 2 do
  names[#names + 1] = refs[j]
end
local vals = redis.call('HMGET', LEASE, unpack(names))
local out, orphans = {}, {}
for j, ref in ipairs(names) do
  local l = lease(vals[j])
  local r = l and decode(redis.call('HGET', ITEMS, ref))
  local a = r and r.a
  if not a then
    orphans[#orphans + 1] = ref
  else
    out[#out + 1] = ref
    out[#out + 1] = l.tok
    out[#out + 1] = a
    out[#out + 1] = refs[2 * j]
  end
end
if #orphans > 0 then
  local flow = redis.call('GET', FLAG) == '1'
  redis.call('ZREM', LEASES, unpack(orphans))
  redis.call('HDEL', LEASE, unpack(orphans))
  if flow then
    redis.call('ZREM', TLEASES, unpack(orphans))
  end
end
return out
