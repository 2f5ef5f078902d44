-- Lists leases that expired by now, with the token and attempts each had,
-- for the caller to put to the policy. Writes nothing except dropping a
-- lease entry whose record no longer says leased (it cannot be settled).
--
-- ARGV[3] now (us)   ARGV[4] how many
-- Returns a flat list: ref, token, attempts, score, ...
local refs = redis.call('ZRANGE', LEASES, '-inf', ARGV[3], 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for j = 1, #refs, 2 do
  local ref = refs[j]
  local st = redis.call('HMGET', kitem(ref), 's', 'tok', 'a')
  if st[1] ~= 'l' then
    redis.call('ZREM', LEASES, ref)
  else
    out[#out + 1] = ref
    out[#out + 1] = st[2]
    out[#out + 1] = st[3]
    out[#out + 1] = refs[j + 1]
  end
end
return out
