-- Lifecycle helpers (pause, cancel, waits, priorities) for the queue
-- scripts that need them; prepended after queue_lib.lua. Each writes, so
-- a script calls them only once its checks are done.

-- lifePlaceholders writes the placeholders of the lifecycle keys (see
-- the prelude) for a queue an earlier release created.
local function lifePlaceholders()
  redis.call('HSETNX', LIFE, '', '')
  redis.call('ZADD', WAITS, 'NX', '+inf', '')
  redis.call('ZADD', PARKED, 'NX', '+inf', '')
  redis.call('ZADD', CANCELS, 'NX', '+inf', '')
  redis.call('ZADD', PDELAY, 'NX', '+inf', '')
end

-- usOfNs is a decimal count of ns as us (truncated), a string.
local function usOfNs(ns)
  if #ns <= 3 then
    return '0'
  end
  return string.sub(ns, 1, #ns - 3)
end

-- intoCancelled makes r (of ref, out of every other index already)
-- cancelled as its extension's ca/cr say, finished at now (us), and
-- writes it, with its cancelled event into E (history_lib.lua) when the
-- queue records events.
local function intoCancelled(ref, r, now, E)
  local X = xget(r)
  X.ws, X.wsi, X.wu = '', '', ''
  if X.cu == '' then
    X.cu = usOfNs(X.ca)
  end
  X.fa = now
  xput(r, X)
  r.s = 'c'
  redis.call('HSET', ITEMS, ref, encode(r))
  redis.call('ZADD', CANCELS, X.cu, ref)
  redis.call('ZADD', FIN, '0', finMember(now, r.t, r.i))
  if E then
    evAdd(E, ref, ev('cancelled', E.now, {why = X.cr}))
  end
end

-- endMarked ends the marked lease of ref and cancels its item r.
local function endMarked(ref, r, now, E)
  redis.call('HDEL', LEASE, ref)
  redis.call('ZREM', LEASES, ref)
  redis.call('ZREM', TLEASES, ref)
  redis.call('HINCRBY', LIFE, 'm', -1)
  intoCancelled(ref, r, now, E)
end

-- marked reports whether the record r carries a cancel mark.
local function marked(r)
  return r.x ~= nil and r.x ~= '' and xget(r).ca ~= ''
end
