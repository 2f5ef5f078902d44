-- Scans dead letters in dead order after a cursor and returns those that
-- match the filter. The scan is bounded per call so a filter that matches
-- little cannot hold the server; the caller continues from the returned
-- position.
--
-- ARGV[3] the dead set to scan (the queue's, or one tenant's)
-- ARGV[4] after dead seq (exclusive)   ARGV[5] scan budget   ARGV[6] matches wanted
-- ARGV[7] tenant ('' any)   ARGV[8] id ('' any)   ARGV[9] error substring ('' any)
-- Returns {last seq scanned, 1 if the set is exhausted, {seq, record}...}
local refs = redis.call('ZRANGE', ARGV[3], '(' .. ARGV[4], '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[5]))
local want = tonumber(ARGV[6])
local found = {}
local pos = ARGV[4]
local exhausted = 1
if #refs / 2 >= tonumber(ARGV[5]) then
  exhausted = 0
end
for j = 1, #refs, 2 do
  local ref = refs[j]
  pos = refs[j + 1]
  local v = redis.call('HGET', ITEMS, ref)
  local r = decode(v)
  if r and r.s == 'd' and (ARGV[7] == '' or r.t == ARGV[7]) and (ARGV[8] == '' or r.i == ARGV[8])
      and (ARGV[9] == '' or string.find(r.e, ARGV[9], 1, true)) then
    found[#found + 1] = {pos, v}
    if #found >= want then
      if j + 1 < #refs then
        exhausted = 0
      end
      break
    end
  end
end
return {pos, exhausted, found}
