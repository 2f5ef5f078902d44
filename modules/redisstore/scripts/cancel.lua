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
-- 'n' for no record, and '' for one skipped (a state not allowed, or a
-- lease marked already).
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
    if string.find(allowed, s, 1, true) then
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
    intoCancelled(ref, r)
    if s == 'q' then
      -- The tenant leaves the rotation when that was its last due item
      -- (and waits for its first delayed one, if any).
      local lt = lp(r.t)
      local NX = hex16(tonumber(ARGV[1]) + 1)
      local due = firstOf(lt)
      local more = #redis.call('ZRANGE', READY, '[' .. lt .. 'p', '(' .. lt .. 'q', 'BYLEX', 'LIMIT', 0, 1) > 0
      if not more and (not due or string.sub(due, #lt + 1, #lt + 16) >= NX) then
        redis.call('ZREM', ROT, r.t)
        if due then
          redis.call('ZADD', WAIT, dueOf(lt, due), r.t)
        else
          redis.call('ZREM', WAIT, r.t)
        end
      end
    end
  end
end
return out
