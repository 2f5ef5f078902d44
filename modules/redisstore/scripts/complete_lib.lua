-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call; each queue's leases are
-- read with one HMGET and dropped with one HDEL of the records, one of the
-- leases and one ZREM.
--
-- complete reads groups of one queue each: from KEYS[fk] on, twelve keys
-- per group (the queue's ITEMS, LEASE, LEASES, FLAG, FSTATE, TLEASES, LIFE,
-- CANCELS, FIN, IDS, EVS and ELOG), and
-- from ARGV[fa] on, how many leases the group has, the queue's wake
-- channel, then ref, token and ID index member per lease (the caller
-- makes the member: cutting it from the ref here took more of the
-- server's time than the ZREM that removes it). ARGV[1] and ARGV[2] are
-- the caller's now (us) and now+1us as 16 hex digits; ARGV[3] is now
-- (ns). It returns the 1-based positions (counted over all groups) of
-- the leases that were lost, ascending. Every group
-- is read before the first is written: completeRead reads and returns the
-- positions lost and what to drop, completeWrite drops it.
--
-- A lease that carries a cancel mark (LIFE's 'm' counts them, so a queue
-- without marks reads one field more) is not completed: its item is
-- cancelled, and its position is returned negated.
--
-- The same read of LIFE gives the queue's history flag (history_lib.lua):
-- without it the records are not read and only the IDS members go with
-- them. With it, an item the retention keeps, or that asked for a
-- uniqueness window, stays as completed (in FIN by its finish time), and
-- with events on each gets its completed event.
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
      refs[j] = ARGV[i + 3 * j - 1]
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
      if tok and tok == ARGV[i + 3 * j] and not seen[ref] then
        seen[ref] = ARGV[i + 3 * j + 1] -- its ID index member
        ok[#ok + 1] = ref
        okPos[#ok] = k
      else
        lost[#lost + 1] = k
      end
    end
    local cancel, keep, hk, hist, E, recs, claims, anyUnique
    local marked = false
    if #ok > 0 then
      local lf = redis.call('HMGET', KEYS[key + 6], 'm', 'h', 'ra', 'rc', 're', 'u')
      hist = histOf(lf[2], lf[3], lf[4], lf[5])
      anyUnique = lf[6] == '1'
      marked = (tonumber(lf[1]) or 0) > 0
      if marked or hist then
        recs = redis.call('HMGET', KEYS[key], unpack(ok))
      end
      if hist then
        hk = {life = KEYS[key + 6], fin = KEYS[key + 8], ids = KEYS[key + 9], evs = KEYS[key + 10], elog = KEYS[key + 11]}
        E = newEvents(hist, hk, ARGV[3])
      end
    end
    if marked then
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
      ok, recs = keep, nil
    end
    local gone = ok
    if hist then
      -- Which of the completed stay, and their events.
      local lrefs = {}
      for j = 1, n do
        lrefs[refs[j]] = vals[j]
      end
      local rs = #ok > 0 and (recs or redis.call('HMGET', KEYS[key], unpack(ok))) or {}
      if E and #ok > 0 then
        claims = redis.call('HMGET', hk.evs, unpack(ok))
      end
      keep, gone = {}, {}
      -- Items of one claim share their lease value (the claim's token is
      -- in it), so their worker and claim time, and thus the run time of
      -- their completed event: that event is made once per lease value
      -- and attempts count.
      local byLease = {}
      for j, ref in ipairs(ok) do
        -- The record as completed is made from its string where it can
        -- be (recFinish), without decoding and re-encoding it.
        -- A queue that keeps nothing, none of whose items ever asked for
        -- a uniqueness window, keeps none of these: their events need
        -- only the attempts.
        local v = rs[j]
        local pk, nv, uf
        if not hist.keeps and not anyUnique then
          local a = recAttempts(v)
          if a then
            pk, uf = {a = a}, ''
            nv = true
          end
        else
          pk = recPeek(v)
          if pk then
            nv, uf = recFinish(v, pk, ARGV[1])
          end
        end
        local r
        if nv then
          r = pk
        else
          r = decode(v)
          uf = r and xget(r).uf
        end
        if r then
          local stay = hist.keeps or uf ~= ''
          if E then
            local lv = lrefs[ref]
            local B = byLease[lv] -- every completed lease has its value (ok holds only those)
            if not B then
              local at = claims and claimedAt(claims[j])
              B = {w = string.match(lv, '^%d+|%d+|%d+|%d*|[^|]*|(.*)$') or '', rt = at and nsSince(ARGV[3], at), evs = {}}
              byLease[lv] = B
            end
            local e = B.evs[r.a]
            if not e then
              e = ev('completed', E.now, {w = B.w, a = string.format('%d', tonumber(r.a) + 1), rt = B.rt})
              B.evs[r.a] = e
            end
            if claims and claims[j] then
              E.cur[ref] = claims[j]
            end
            evAdd(E, ref, e, not stay)
          end
          if stay then
            keep[#keep + 1] = {ref, r, nv}
          else
            gone[#gone + 1] = ref
          end
        else
          gone[#gone + 1] = ref
        end
      end
    end
    if #ok > 0 or cancel then
      local marks = flow and #ok > 0 and capMarked(KEYS[key + 4], ok) or {}
      drops[#drops + 1] = {key, ok, flow = flow, marks = marks, wake = (#marks > 0 or cancel) and ARGV[i + 1], cancel = cancel,
        gone = gone, keep = keep, E = E, hk = hk, idOf = seen}
    end
    i = i + 2 + 3 * n
    key = key + 12
  end
  return lost, drops
end

local function completeWrite(drops)
  local woken = {}
  for _, d in ipairs(drops) do
    local key, ok = d[1], d[2]
    local hk = d.hk or {life = KEYS[key + 6], fin = KEYS[key + 8], ids = KEYS[key + 9], evs = KEYS[key + 10], elog = KEYS[key + 11]}
    if #d.gone > 0 then
      redis.call('HDEL', KEYS[key], unpack(d.gone))
      histDrop(hk, d.gone, d.hk ~= nil, d.idOf)
    end
    if d.keep and #d.keep > 0 then
      local set, fin = {}, {}
      for _, kr in ipairs(d.keep) do
        local ref, r, nv = kr[1], kr[2], kr[3]
        if not nv then
          local X = xget(r)
          X.fa = ARGV[1]
          xput(r, X)
          r.s = 'k'
          nv = encode(r)
        end
        set[#set + 1] = ref
        set[#set + 1] = nv
        fin[#fin + 1] = '0'
        fin[#fin + 1] = finMember(ARGV[1], r.t, r.i)
      end
      redis.call('HSET', KEYS[key], unpack(set))
      redis.call('ZADD', hk.fin, unpack(fin))
    end
    if #ok > 0 then
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
      X.fa = ARGV[1]
      xput(r, X)
      r.s = 'c'
      redis.call('HSET', KEYS[key], ref, encode(r))
      redis.call('ZADD', hk.fin, '0', finMember(ARGV[1], r.t, r.i))
      if d.E then
        evAdd(d.E, ref, ev('cancelled', d.E.now, {why = X.cr}))
      end
      redis.call('HDEL', KEYS[key + 1], ref)
      redis.call('ZREM', KEYS[key + 2], ref)
      redis.call('ZREM', KEYS[key + 5], ref)
      redis.call('HINCRBY', KEYS[key + 6], 'm', -1)
      redis.call('ZADD', KEYS[key + 7], X.cu, ref)
    end
    evFlush(d.E)
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
