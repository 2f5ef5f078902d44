-- Cancels items, or marks their leases, each re-checked here against the
-- states the caller allows, so a bulk cancel never touches an item that
-- changed since the caller listed it.
--
-- ARGV[1] now (us)   ARGV[2] now (ns)   ARGV[3] reason   ARGV[4] the
-- states allowed, as letters (q queued, w waiting, l leased, d dead,
-- c cancelled)   ARGV[5] '1' when a lease already marked is to be
-- reported as leased (Cancel of one item), '0' when it is skipped
-- ARGV[6] wake channel, then refs.
-- Returns per ref the letter of the state it was in when it was
-- cancelled or marked, 'c' for one already cancelled (left as it is),
-- 'n' for no record, 'k' for a completed one (left as it is, when a
-- lease already marked is reported) and '' for one skipped (a state not
-- allowed, or a lease marked already).
local allowed = ARGV[4]
local out, todo, seen = {}, {}, {}
local vals = redis.call('HMGET', ITEMS, unpack(ARGV, 7))
for k = 7, #ARGV do
  local ref = ARGV[k]
  local r = decode(vals[k - 6])
  local st = ''
  if not r then
    st = 'n'
  elseif not seen[ref] then
    seen[ref] = true
    local s = r.s
    if s == 'q' and redis.call('HEXISTS', LEASE, ref) == 1 then
      s = 'l'
    end
    if s == 'k' then
      st = ARGV[5] == '1' and 'k' or ''
    elseif string.find(allowed, s, 1, true) then
      if s == 'c' then
        st = 'c'
      elseif s == 'l' and marked(r) then
        st = ARGV[5] == '1' and 'l' or ''
      else
        st = s
        todo[#todo + 1] = {ref, r, s}
      end
    end
  end
  out[#out + 1] = st
end
if #todo == 0 then
  return out
end

-- Where each tenant of a queued item cancelled here goes, read before
-- the writes: out of the rotation when the cancelled items were its last
-- due ones (waiting for its first delayed one, if any). Each read skips
-- the members this call removes, so it sees READY as the writes leave it.
local NX = hex16(tonumber(ARGV[1]) + 1)
local gone, byT, ts = {}, {}, {}
for _, c in ipairs(todo) do
  local r = c[2]
  if c[3] == 'q' then
    gone[r.m] = true
    if not byT[r.t] then
      byT[r.t] = 0
      ts[#ts + 1] = r.t
    end
    byT[r.t] = byT[r.t] + 1
  end
end
local function firstLeft(lo, hi, k)
  for _, m in ipairs(redis.call('ZRANGE', READY, lo, hi, 'BYLEX', 'LIMIT', 0, k + 1)) do
    if not gone[m] then
      return m
    end
  end
  return nil
end
local leave = {}
for _, t in ipairs(ts) do
  local lt, k = lp(t), byT[t]
  if not firstLeft('[' .. lt, '(' .. lt .. NX, k) and not firstLeft('[' .. lt .. 'p', '(' .. lt .. 'q', k) then
    local f = firstLeft('[' .. lt .. NX, '(' .. lt .. 'g', k)
    leave[#leave + 1] = {t, f and dueOf(lt, f)}
  end
end

local E = newEvents(histCfg(LIFE), QK, ARGV[2])

-- Writes from here on.
lifePlaceholders()
for _, c in ipairs(todo) do
  local ref, r, s = c[1], c[2], c[3]
  local X = xget(r)
  X.ca, X.cr, X.cu = ARGV[2], ARGV[3], ARGV[1]
  if s == 'l' then
    xput(r, X)
    redis.call('HSET', ITEMS, ref, encode(r))
    redis.call('HINCRBY', LIFE, 'm', 1)
  else
    if s == 'q' then
      redis.call('ZREM', READY, r.m)
      redis.call('ZREM', PDELAY, r.m)
    elseif s == 'w' then
      redis.call('ZREM', WAITS, ref)
      redis.call('ZREM', PARKED, ref)
    elseif s == 'd' then
      redis.call('ZREM', DEAD, ref)
      redis.call('ZREM', TDEAD, lp(r.t) .. hex16(tonumber(r.ds) or 0) .. ref)
    end
    intoCancelled(ref, r, ARGV[1], E)
  end
end
for _, l in ipairs(leave) do
  redis.call('ZREM', ROT, l[1])
  if l[2] then
    redis.call('ZADD', WAIT, l[2], l[1])
  else
    redis.call('ZREM', WAIT, l[1])
  end
end
evFlush(E)
return out
