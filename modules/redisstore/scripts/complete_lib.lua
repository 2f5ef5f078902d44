-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call; each queue's leases are
-- read with one HMGET and dropped with one HDEL of the records, one of the
-- leases and one ZREM.
--
-- complete reads groups of one queue each: from KEYS[fk] on, eight keys
-- per group (the queue's ITEMS, LEASE, LEASES, FLAG, FSTATE, TLEASES, LIFE
-- and CANCELS), and
-- from ARGV[fa] on, how many leases the group has, the queue's wake
-- channel, then ref and token per lease (ARGV[1] and ARGV[2] are the
-- caller's: now). It returns the 1-based positions (counted
-- over all groups) of the leases that were lost, ascending. Every group
-- is read before the first is written: completeRead reads and returns the
-- positions lost and what to drop, completeWrite drops it.
--
-- A lease that carries a cancel mark (LIFE's 'm' counts them, so a queue
-- without marks reads one field more) is not completed: its item is
-- cancelled, and its position is returned negated.
--
-- A queue without limits (FLAG not '1') costs one GET more than it did
-- before flow control. One with limits also drops the leases from
-- TLEASES, and wakes the queue's claimers when a lease of a tenant a
-- claim passed over for its cap ends (see capMarked in flow_lib.lua).
local function completeRead(fa, fk)
  local lost, k, i, key = {}, 0, fa, fk
  local drops = {}
  while i <= #ARGV do
    local n = tonumber(ARGV[i])
    local refs = {}
    for j = 1, n do
      refs[j] = ARGV[i + 2 * j]
    end
    local vals = redis.call('HMGET', KEYS[key + 1], unpack(refs))
    local flow = redis.call('GET', KEYS[key + 3]) == '1'
    -- A claimed batch shares one lease value, so each distinct value is
    -- parsed once.
    local toks, ok, seen, okPos = {}, {}, {}, {}
    for j = 1, n do
      local v, ref = vals[j], refs[j]
      local tok = v and toks[v]
      if v and tok == nil then
        tok = string.match(v, '^(%d+)|') or false
        toks[v] = tok
      end
      k = k + 1
      if tok and tok == ARGV[i + 1 + 2 * j] and not seen[ref] then
        seen[ref] = true
        ok[#ok + 1] = ref
        okPos[#ok] = k
      else
        lost[#lost + 1] = k
      end
    end
    local cancel
    if #ok > 0 and (tonumber(redis.call('HGET', KEYS[key + 6], 'm')) or 0) > 0 then
      local recs = redis.call('HMGET', KEYS[key], unpack(ok))
      local keep, kpos = {}, {}
      for j, ref in ipairs(ok) do
        local r = decode(recs[j])
        if r and r.x ~= '' and xget(r).ca ~= '' then
          cancel = cancel or {}
          cancel[#cancel + 1] = {ref, r}
          lost[#lost + 1] = -okPos[j]
        else
          keep[#keep + 1], kpos[#kpos + 1] = ref, okPos[j]
        end
      end
      ok = keep
    end
    if #ok > 0 or cancel then
      local marks = flow and #ok > 0 and capMarked(KEYS[key + 4], ok) or {}
      drops[#drops + 1] = {key, ok, flow = flow, marks = marks, wake = (#marks > 0 or cancel) and ARGV[i + 1], cancel = cancel}
    end
    i = i + 2 + 2 * n
    key = key + 8
  end
  return lost, drops
end

local function completeWrite(drops)
  local woken = {}
  for _, d in ipairs(drops) do
    local key, ok = d[1], d[2]
    if #ok > 0 then
      redis.call('HDEL', KEYS[key], unpack(ok))
      redis.call('HDEL', KEYS[key + 1], unpack(ok))
      redis.call('ZREM', KEYS[key + 2], unpack(ok))
      if d.flow then
        redis.call('ZREM', KEYS[key + 5], unpack(ok))
      end
      capUnmark(KEYS[key + 4], d.marks)
    end
    for _, c in ipairs(d.cancel or {}) do
      -- A marked lease ends cancelled (as endMarked in lifecycle_lib.lua).
      local ref, r = c[1], c[2]
      local X = xget(r)
      X.ws, X.wsi, X.wu = '', '', ''
      if X.cu == '' then
        X.cu = string.sub(X.ca, 1, #X.ca - 3)
      end
      xput(r, X)
      r.s = 'c'
      redis.call('HSET', KEYS[key], ref, encode(r))
      redis.call('HDEL', KEYS[key + 1], ref)
      redis.call('ZREM', KEYS[key + 2], ref)
      redis.call('ZREM', KEYS[key + 5], ref)
      redis.call('HINCRBY', KEYS[key + 6], 'm', -1)
      redis.call('ZADD', KEYS[key + 7], X.cu, ref)
    end
    if d.wake and not woken[d.wake] then
      woken[d.wake] = true
      redis.call('PUBLISH', d.wake, '1')
    end
  end
end

local function complete(fa, fk)
  local lost, drops = completeRead(fa, fk)
  completeWrite(drops)
  return lost
end
