-- Deletes cancelled items cancelled before a time, each re-checked here.
--
-- ARGV[1] the cut (us, exclusive), then refs. Returns how many it deleted.
local cut = tonumber(ARGV[1])
local vals = redis.call('HMGET', ITEMS, unpack(ARGV, 2))
local del, fin = {}, {}
for k = 2, #ARGV do
  local r = decode(vals[k - 1])
  local sc = redis.call('ZSCORE', CANCELS, ARGV[k])
  if r and r.s == 'c' and sc and tonumber(sc) < cut then
    del[#del + 1] = ARGV[k]
    local fa = finishedUs(r)
    if fa ~= '' then
      fin[#fin + 1] = finMember(fa, r.t, r.i)
    end
  end
end
if #del == 0 then
  return 0
end

-- Writes from here on.
redis.call('HDEL', ITEMS, unpack(del))
redis.call('ZREM', CANCELS, unpack(del))
if #fin > 0 then
  redis.call('ZREM', FIN, unpack(fin))
end
histDrop(QK, del, true)
return #del
