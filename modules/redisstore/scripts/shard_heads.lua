-- Lists a shard's tenants with due work, in the order its next claim
-- serves them, for a sharded claim to deal its turns between shards. Reads
-- only.
--
-- KEYS[1] ROT   KEYS[2] WAIT   KEYS[3] TURNS   KEYS[4] WAITS   KEYS[5] LIFE
-- ARGV[1] now (us)   ARGV[2] most tenants listed
-- Returns {the tenants, and for each 1 if it is paused else 0}: those of
-- the rotation merged by turn stamp with the waiting ones whose first
-- item is due by now (they rejoin at their stamp), then those of waits
-- that timed out by now (they join behind). While the whole queue is
-- paused no tenant is marked: the claims say so.
local now, max = ARGV[1], tonumber(ARGV[2])
local all = {}
local rot = redis.call('ZRANGE', KEYS[1], '-inf', '(+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, max)
for j = 1, #rot, 2 do
  all[#all + 1] = {rot[j], tonumber(rot[j + 1])}
end
local woke = redis.call('ZRANGE', KEYS[2], '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
if #woke > 0 then
  local st = redis.call('HMGET', KEYS[3], unpack(woke))
  for j, t in ipairs(woke) do
    all[#all + 1] = {t, tonumber(st[j] or '0') or 0}
  end
end
table.sort(all, function(a, b)
  if a[2] ~= b[2] then
    return a[2] < b[2]
  end
  return a[1] < b[1]
end)
local out, seen = {}, {}
for j = 1, math.min(#all, max) do
  out[j] = all[j][1]
  seen[all[j][1]] = true
end
if #out < max then
  local refs = redis.call('ZRANGE', KEYS[4], '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
  for _, ref in ipairs(refs) do
    local c = string.find(ref, ':', 1, true)
    if c and #out < max then
      local t = string.sub(ref, c + 1, c + tonumber(string.sub(ref, 1, c - 1)))
      if not seen[t] then
        out[#out + 1] = t
        seen[t] = true
      end
    end
  end
end
local paused = {}
local some = tonumber(redis.call('HGET', KEYS[5], 'n') or '0') > 0 and redis.call('HGET', KEYS[5], 'q') ~= '1'
for j, t in ipairs(out) do
  paused[j] = 0
  if some and redis.call('HGET', KEYS[5], 't' .. #t .. ':' .. t) == '1' then
    paused[j] = 1
  end
end
return {out, paused}
