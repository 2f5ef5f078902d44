-- Scans dead letters in dead order after a cursor and returns those that
-- match the filter. The scan is bounded per call so a filter that matches
-- little cannot hold the server; the caller continues from the returned
-- position. Reads only.
--
-- ARGV[1] '' to scan the queue's dead set, or lp(tenant) to scan that
-- tenant's range of TDEAD   ARGV[2] after dead seq (exclusive; with
-- ARGV[8], before it, '' for the newest)
-- ARGV[3] scan budget   ARGV[4] matches wanted
-- ARGV[5] tenant ('' any)   ARGV[6] id ('' any)   ARGV[7] error substring
-- ('' any), ASCII-lowered: it is found in the lowered error
-- ARGV[8] 'newest' to scan newest first
-- Returns {last seq scanned, 1 if the set is exhausted, {seq, record}...}
local budget = tonumber(ARGV[3])
local newest = ARGV[8] == 'newest'
local refs, seqs = {}, {}
if ARGV[1] == '' then
  local zs
  if newest then
    local top = '+inf'
    if ARGV[2] ~= '' then
      top = '(' .. ARGV[2]
    end
    zs = redis.call('ZRANGE', DEAD, top, '-inf', 'BYSCORE', 'REV', 'WITHSCORES', 'LIMIT', 0, budget)
  else
    zs = redis.call('ZRANGE', DEAD, '(' .. ARGV[2], '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, budget)
  end
  for j = 1, #zs, 2 do
    refs[#refs + 1], seqs[#seqs + 1] = zs[j], zs[j + 1]
  end
else
  local lt = ARGV[1]
  local ms
  if newest then
    local top = '(' .. lt .. 'g'
    if ARGV[2] ~= '' then
      top = '(' .. lt .. hex16(tonumber(ARGV[2]))
    end
    ms = redis.call('ZRANGE', TDEAD, top, '(' .. lt, 'BYLEX', 'REV', 'LIMIT', 0, budget)
  else
    ms = redis.call('ZRANGE', TDEAD, '[' .. lt .. hex16(tonumber(ARGV[2]) + 1), '(' .. lt .. 'g', 'BYLEX', 'LIMIT', 0, budget)
  end
  for j, m in ipairs(ms) do
    refs[j] = string.sub(m, #lt + 17)
    seqs[j] = string.format('%d', tonumber(string.sub(m, #lt + 1, #lt + 16), 16))
  end
end
local want = tonumber(ARGV[4])
local found = {}
local pos = ARGV[2]
local exhausted = 1
if #refs >= budget then
  exhausted = 0
end
for j, ref in ipairs(refs) do
  pos = seqs[j]
  local v = redis.call('HGET', ITEMS, ref)
  local r = decode(v)
  if r and r.s == 'd' and (ARGV[5] == '' or r.t == ARGV[5]) and (ARGV[6] == '' or r.i == ARGV[6])
      and (ARGV[7] == '' or string.find(string.lower(r.e), ARGV[7], 1, true)) then
    found[#found + 1] = {pos, v}
    if #found >= want then
      if j < #refs then
        exhausted = 0
      end
      break
    end
  end
end
return {pos, exhausted, found}
