-- Leases up to max due items of one queue in tenant rotation: the tenant
-- at the head of the rotation gives its first due item and goes to the
-- back, round after round, until the batch is full or no tenant has a due
-- item. Taking the item out of READY and writing its lease happen in this
-- one script, so there is no window in which an item is in neither place.
--
-- The rounds are worked out in memory first: the first max tenants of
-- the rotation are the only ones a batch of max can reach (each has a due
-- item, or it would not be there), and each tenant's due items are read
-- in one range. Everything the claim decides on is read before its first
-- write; the writes then go once per key, not per turn.
--
-- ARGV[1] now (us)   ARGV[2] now+1us as 16 hex digits   ARGV[3] now (ns)
-- ARGV[4] expiry (us)   ARGV[5] expiry (ns)   ARGV[6] worker   ARGV[7] max
-- ARGV[8] how many turns the log keeps
-- ARGV[9] nonce of this call: the refs and token of the last 1024 claims
-- are kept by nonce, so a retry of a claim whose reply was lost gets the
-- same leases back (those still held) instead of leasing more.
-- ARGV[10] '1' when the caller wants the claim's report of held tenants
-- claim returns the token, then the records of the items it leased; the
-- caller fills in the leases. When the queue has limits and the caller
-- asked, the last element is a nested list: reason, until (us) per tenant
-- the claim passed over. It reads its arguments from ARGV, so a script
-- that calls it keeps ARGV[1..10] as above.
--
-- One claim issues one fencing token for its whole batch: a token is
-- never issued twice for the same item, which is what fencing needs, and
-- the batch then shares one lease value.
--
-- Every string a script makes costs about as much as a redis.call here
-- (a fraction of a microsecond, but a batch of 100 used to make
-- thousands), so each item costs the strings Redis hands the script (its
-- ready member and record) and one cut for its ref; everything written
-- per claim is built once.
-- concatInto appends b's elements to a and returns a.
local function concatInto(a, b)
  for _, x in ipairs(b) do
    a[#a + 1] = x
  end
  return a
end

-- Lifecycle state of this claim, read once by claimRead from LIFE: PRI
-- when the queue ever had prioritised items (the tenants' priority
-- sections are then read), PAUSEN when some tenant is paused (the claim
-- then takes the walk, which passes paused tenants over).
local PRI, PAUSEN = false, false
-- EVC is the queue's events cap while it records events (LIFE's 're',
-- read with the lifecycle flags, so a queue without events pays nothing).
local EVC = 0
-- dueRange returns up to n due members of tenant lt from offset off, in
-- claim order: without priorities the plain lex range; with them the
-- ranks above 0 (the priority section's members before 'p64'), the
-- plain due items, then the ranks below 0. From offset 0 (nearly every
-- read) one range of the section gives both its ends when it is shorter
-- than n, so a tenant costs one read more than without priorities at
-- most, and none when its highest ranks fill the read: that read is
-- then the reply as it came, not copied member by member.
local function dueRange(lt, NX, off, n)
  local plain = {'[' .. lt, '(' .. lt .. NX}
  if not PRI then
    return redis.call('ZRANGE', READY, plain[1], plain[2], 'BYLEX', 'LIMIT', num(off), num(n))
  end
  local mid = lt .. 'p64'
  if off == 0 then
    local sec = redis.call('ZRANGE', READY, '[' .. lt .. 'p', '(' .. lt .. 'q', 'BYLEX', 'LIMIT', '0', num(n))
    -- hi: how many of sec (in order) are ranks above 0, which lead it.
    -- Nearly always all or none of them are, found at either end.
    local hi = #sec
    if hi > 0 and not (sec[hi] < mid) then
      hi = 0
      while hi < #sec and sec[hi + 1] < mid do
        hi = hi + 1
      end
    end
    if hi == n then
      return sec
    end
    local out = {}
    for k = 1, hi do
      out[k] = sec[k]
    end
    concatInto(out, redis.call('ZRANGE', READY, plain[1], plain[2], 'BYLEX', 'LIMIT', '0', num(n - hi)))
    for k = hi + 1, #sec do
      if #out >= n then
        break
      end
      out[#out + 1] = sec[k]
    end
    return out
  end
  local out = {}
  local rs = {{'[' .. lt .. 'p', '(' .. mid}, plain, {'(' .. mid, '(' .. lt .. 'q'}}
  for _, r in ipairs(rs) do
    if #out >= n then
      break
    end
    local skip = false
    if off > 0 then
      local c = redis.call('ZLEXCOUNT', READY, r[1], r[2])
      if off >= c then
        off, skip = off - c, true
      end
    end
    if not skip then
      concatInto(out, redis.call('ZRANGE', READY, r[1], r[2], 'BYLEX', 'LIMIT', num(off), num(n - #out)))
      off = 0
    end
  end
  return out
end

-- memberRef is the ref of member m of tenant lt.
local function memberRef(lt, m)
  if PRI then
    return refOfMember(lt, m)
  end
  return string.sub(m, #lt + 33)
end

-- endWaits queues the waits that timed out by now (ARGV[1]), due when
-- they timed out, with a Resume saying so.
local function endWaits()
  local got = redis.call('ZRANGE', WAITS, '-inf', ARGV[1], 'BYSCORE', 'LIMIT', '0', '256', 'WITHSCORES')
  if #got == 0 then
    return
  end
  local refs, dues = {}, {}
  for j = 1, #got, 2 do
    refs[#refs + 1], dues[#dues + 1] = got[j], got[j + 1]
  end
  local vals = redis.call('HMGET', ITEMS, unpack(refs))
  local seq = tonumber(redis.call('GET', SEQ) or '0')
  local P = newPushes()
  P.now = tonumber(ARGV[1])
  local recs = {}
  local E = EVC > 0 and newEvents({ev = EVC}, QK, ARGV[3])
  for k, ref in ipairs(refs) do
    local r = decode(vals[k])
    if r and r.s == 'w' then
      local X = xget(r)
      if E then
        evAdd(E, ref, ev('timed_out', ARGV[3], {sig = X.ws}))
      end
      X.rs, X.rp, X.rt, X.ra = X.ws, '', '1', X.wu
      X.ws, X.wsi, X.wu = '', '', ''
      xput(r, X)
      r.nb = ''
      seq = seq + 1
      local due = string.format('%d', tonumber(dues[k]))
      add(P, r, ref, due, hex16(tonumber(due)), seq)
      recs[#recs + 1] = ref
      recs[#recs + 1] = r
    end
  end
  plan(P)
  redis.call('ZREM', WAITS, unpack(refs))
  redis.call('ZREM', PARKED, unpack(refs))
  if #recs > 0 then
    for j = 2, #recs, 2 do
      recs[j] = encode(recs[j])
    end
    redis.call('HSET', ITEMS, unpack(recs))
    redis.call('SET', SEQ, string.format('%d', seq))
    apply(P, P.now)
  end
  evFlush(E)
end

-- promoteDue moves the delayed prioritised items that fell due by now
-- into their tenants' priority sections.
local function promoteDue()
  local ms = redis.call('ZRANGE', PDELAY, '-inf', ARGV[1], 'BYSCORE', 'LIMIT', '0', '256')
  if #ms == 0 then
    return
  end
  local refs, lts = {}, {}
  for j, m in ipairs(ms) do
    local c = string.find(m, ':', 1, true)
    local lt = string.sub(m, 1, c + tonumber(string.sub(m, 1, c - 1)))
    lts[j], refs[j] = lt, string.sub(m, #lt + 33)
  end
  local vals = redis.call('HMGET', ITEMS, unpack(refs))
  local add, del, recs = {}, {}, {}
  for j, m in ipairs(ms) do
    local r = decode(vals[j])
    if r and r.s == 'q' and r.m == m then
      local lt = lts[j]
      r.m = pMember(lt, xprio(r), string.sub(m, #lt + 1, #lt + 32), refs[j])
      del[#del + 1] = m
      add[#add + 1] = '0'
      add[#add + 1] = r.m
      recs[#recs + 1] = refs[j]
      recs[#recs + 1] = encode(r)
    end
  end
  redis.call('ZREM', PDELAY, unpack(ms))
  if #del > 0 then
    redis.call('ZREM', READY, unpack(del))
    redis.call('ZADD', READY, unpack(add))
    redis.call('HSET', ITEMS, unpack(recs))
  end
end

local function byStamp(a, b)
  if a[2] ~= b[2] then
    return a[2] < b[2]
  end
  return a[1] < b[1]
end

-- claimReadFlow is claimRead for a queue with limits (FLAG '1'). It walks
-- the rotation as the rotation itself would move: the tenant at the head
-- gives an item at a time, up to its weight in a row (its credit counts
-- the items of its current turn), and then goes to the back with a new
-- stamp; a tenant that runs out of due items leaves. Before each item the
-- tenant's effective limits are checked, in order: cap (live leases),
-- rate (a token in the bucket), budget (usage in the window). A tenant
-- one of them holds is passed over for the rest of the claim and keeps
-- its stamp and credit; the batch fills from the tenants behind it, so
-- the walk reads the rotation a page at a time, as deep as it must. A
-- tenant the claim does not reach is not read at all.
local function claimReadFlow(freed, head0, woke0, stamps0)
  local now = tonumber(ARGV[1])
  local NX = ARGV[2]
  local max = tonumber(ARGV[7])
  local report = ARGV[10] == '1'
  local nowMs = math.floor(now / 1000)

  -- Tenants whose delayed items fell due rejoin at their stamp.
  local woke = woke0 or redis.call('ZRANGE', WAIT, '-inf', ARGV[1], 'BYSCORE')
  local fromWait, wk = {}, {}
  if #woke > 0 then
    local stamps = stamps0 or redis.call('HMGET', TURNS, unpack(woke))
    for j, t in ipairs(woke) do
      fromWait[t] = stamps[j] or '0'
      wk[j] = {t, tonumber(fromWait[t])}
    end
    table.sort(wk, byStamp)
  end

  -- E holds the tenants read so far, in rotation order (the rotation's
  -- pages merged with the woken tenants by stamp), each with its limits
  -- and flow state.
  local E = {}
  local pageT, pageS, pi, rotOff, rotDone, wi = {}, {}, 1, 0, false, 1
  -- bound is how many live leases any tenant can reach in this claim at
  -- most (every lease of the queue, and the whole batch): a cap above it
  -- cannot bind, so its count is not read.
  local bound
  -- For counting live leases: the leases the complete half of the same
  -- call ends (by ref, and how many per tenant), and the expired ones not
  -- yet reaped, by tenant; read once, when a cap first needs them.
  local gone, goneBy, expired
  local function exhausted()
    return pi > #pageT and rotDone and wi > #wk
  end
  local function pull(n)
    local got = {}
    while #got < n do
      if pi > #pageT and not rotDone then
        local want = n - #got
        local head = head0
        if not (head and rotOff == 0 and want == max) then
          head = redis.call('ZRANGE', ROT, '-inf', '(+inf', 'BYSCORE', 'LIMIT', num(rotOff), num(want), 'WITHSCORES')
        end
        pageT, pageS, pi = {}, {}, 1
        for j = 1, #head, 2 do
          local k = #pageT + 1
          pageT[k], pageS[k] = head[j], tonumber(head[j + 1])
        end
        rotOff = rotOff + #pageT
        rotDone = #pageT < want
      end
      local a, b = pageT[pi], wk[wi]
      local t, stamp
      if a and (not b or pageS[pi] < b[2] or (pageS[pi] == b[2] and a < b[1])) then
        t, stamp, pi = a, pageS[pi], pi + 1
      elseif b then
        t, stamp, wi = b[1], b[2], wi + 1
      else
        break
      end
      -- The walk's fields are named here (false for none yet), so each
      -- table is made at its size once; live is added only for a cap it
      -- counts, cf and the budget's fields only when they apply.
      got[#got + 1] = {t = t, lt = lp(t), stamp = stamp, credit = 0, tat = 0, L = false, rf = false,
        due = false, pos = 0, fetched = 0, more = false, touched = false, served = false, moved = false,
        idx = false, track = false}
    end
    if #got == 0 then
      return
    end
    local lts = {}
    for i, e in ipairs(got) do
      lts[i] = e.lt
    end
    local lims = limitsOf(LIMITS, lts)
    if PAUSEN then
      local pf = {}
      for i, e in ipairs(got) do
        pf[i] = 't' .. e.lt
      end
      local pv = redis.call('HMGET', LIFE, unpack(pf))
      for i, e in ipairs(got) do
        e.paused = pv[i] == '1'
      end
    end
    local sf, swE, swK = {}, {}, {}
    for i, e in ipairs(got) do
      local L = lims[i]
      e.L = L
      if L then
        if L.rate > 0 then
          e.rf = 'r' .. e.lt -- read now, written back below
          local k = #sf + 1
          sf[k], swE[k], swK[k] = e.rf, e, 'r'
        end
        if L.w > 1 then
          e.cf = 'c' .. e.lt
          local k = #sf + 1
          sf[k], swE[k], swK[k] = e.cf, e, 'c'
        end
        if L.width then
          local k = #sf + 1
          sf[k], swE[k], swK[k] = 'b' .. e.lt, e, 'b'
        end
        if L.cap >= LAZYCAP then
          local k = #sf + 1
          sf[k], swE[k], swK[k] = TRACK .. e.lt, e, 'k'
        elseif L.cap > 0 then
          e.idx = true -- always indexed
        end
      end
    end
    if #sf > 0 then
      local v = redis.call('HMGET', FSTATE, unpack(sf))
      for j = 1, #sf do
        local e, f = swE[j], swK[j]
        if f == 'r' then
          e.tat = tonumber(v[j]) or 0
        elseif f == 'k' then
          e.idx = v[j] and true or false
        elseif f == 'c' then
          e.credit = tonumber(v[j]) or 0
          e.credit0 = e.credit
        else
          local L = e.L
          local s = budgetSlot(L, nowMs)
          local slots = budgetSlots(v[j], L.width)
          local c, t = budgetUsed(slots, s)
          if overBudget(L, c, t) then
            e.bover = true
            if report then
              e.buntil = budgetRelease(L, slots, s) * 1000
            end
          end
        end
      end
    end
    -- The caps: counted only where they can bind. idx says the tenant's
    -- new leases go into TLEASES (it is marked, or is listed now).
    for _, e in ipairs(got) do
      local L = e.L
      if L and L.cap > 0 then
        -- A cap below the batch can bind whatever the queue holds.
        if L.cap >= max then
          bound = bound or redis.call('ZCARD', LEASES) + max
        end
        if L.cap < max or bound > L.cap then -- else the cap cannot bind: live stays nil
          if not expired then
            gone, goneBy = {}, {}
            for _, ref in ipairs(freed or {}) do
              local lt = tenantOfRef(ref)
              gone[ref], goneBy[lt] = true, (goneBy[lt] or 0) + 1
            end
            expired = expiredBy(LEASES, ARGV[1], gone)
          end
          local live, refs = capLive(TLEASES, LEASES, e.lt, e.idx, gone, goneBy, expired)
          e.live, e.track, e.idx = live, refs, true
        end
      end
    end
    for _, e in ipairs(got) do
      E[#E + 1] = e
    end
  end

  pull(max)
  if #E == 0 then
    return {reply = {}}
  end
  local chunk = math.ceil(max / #E) + 1 -- as claimRead: a round's share and a look beyond

  local np = 0
  local taken, refs = {}, {} -- READY members and refs of the batch
  local held = {}
  local turn = tonumber(redis.call('GET', TURN) or '0')
  local turn0 = turn

  local function nextItem(e)
    if not e.due then
      local ms = dueRange(e.lt, NX, 0, chunk)
      e.due, e.pos, e.fetched, e.more = ms, 1, #ms, #ms == chunk
    elseif e.pos > #e.due and e.more then
      local want = max - np
      local ms = dueRange(e.lt, NX, e.fetched, want)
      e.due, e.pos, e.fetched, e.more = ms, 1, e.fetched + #ms, #ms == want
    end
    local m = e.due[e.pos]
    if m then
      e.pos = e.pos + 1
    end
    return m
  end

  local function holdOf(e)
    if e.paused then
      return 'paused', 0
    end
    local L = e.L
    if not L then
      return nil
    end
    if e.live and e.live >= L.cap then
      return 'cap', 0
    end
    if L.rate > 0 and not rateAllows(L, e.tat, now) then
      return 'rate', rateNext(L, e.tat)
    end
    if e.bover then
      return 'budget', e.buntil or 0
    end
    return nil
  end

  -- serve gives tenant e its turn: items while it is not held, has due
  -- ones and its credit is below its weight, and the batch has room.
  local back, marks, capped = {}, {}, {}
  local function serve(e)
    local L = e.L
    local w = L and L.w or 1
    while np < max do
      local why, untl = holdOf(e)
      if why then
        e.held = true
        if why == 'cap' then
          marks[#marks + 1] = e.lt -- a lease of it ending wakes the claimers
        end
        if report then
          held[#held + 1] = why
          held[#held + 1] = fnum(untl)
        end
        return
      end
      local m = nextItem(e)
      e.touched = true
      if not m then
        e.empty = true
        return
      end
      np = np + 1
      taken[np] = m
      refs[np] = memberRef(e.lt, m)
      e.served = (e.served or 0) + 1
      if L then
        if e.idx then
          if e.live then
            e.live = e.live + 1
          end
          capped[np] = true -- its lease goes into TLEASES
        end
        if L.rate > 0 then
          e.tat = rateTake(L, e.tat, now)
        end
      end
      e.credit = e.credit + 1
      if e.credit >= w then
        e.credit = 0
        turn = turn + 1
        e.stamp = turn
        e.moved = true
        back[#back + 1] = e
        return
      end
    end
  end

  -- The walk: every tenant read in rotation order first (reading further
  -- pages while the batch has room), then those sent to the back, in the
  -- order they went.
  -- Further pages are as long as the batch's room, doubling each time
  -- (held tenants ahead can make a walk long, but it takes a few reads).
  local oi, bi, grow = 1, 1, 1
  while np < max do
    if oi > #E and not exhausted() then
      pull(math.min(math.max(max - np, grow), 1024))
      grow = grow * 2
    end
    local e
    if oi <= #E then
      e, oi = E[oi], oi + 1
    else
      e = back[bi]
      if not e then
        break
      end
      bi = bi + 1
    end
    if not e.held and not e.empty then
      serve(e)
    end
  end

  -- Where each tenant goes, as in claimRead: a served tenant stays at its
  -- stamp (the new one if its turn ended) while it has a due item left,
  -- else waits for its first delayed item or leaves. A tenant that leaves
  -- the rotation with nothing queued starts its next turn at credit 0.
  local rotAdd, rotDel, waitAdd, turnsSet, fset, fdel, track = {}, {}, {}, {}, {}, {}, {}
  local names, served, inE = {}, {}, {}
  local anyTrack = false
  local bucket = fnumMemo()
  for i, e in ipairs(E) do
    local t, lt = e.t, e.lt
    names[i], served[i], inE[t] = t, e.served, true
    if e.touched then
      local left = e.pos <= #e.due
      if not left and e.more then
        left = #dueRange(lt, NX, e.fetched, 1) > 0
      end
      if left then
        rotAdd[#rotAdd + 1] = e.stamp
        rotAdd[#rotAdd + 1] = t
      else
        local f = redis.call('ZRANGE', READY, '[' .. lt .. NX, '(' .. lt .. 'g', 'BYLEX', 'LIMIT', '0', '1')[1]
        if not fromWait[t] then
          rotDel[#rotDel + 1] = t
        end
        if f then
          waitAdd[#waitAdd + 1] = dueOf(lt, f)
          waitAdd[#waitAdd + 1] = t
        else
          e.credit = 0
        end
      end
      if e.moved then
        turnsSet[#turnsSet + 1] = t
        turnsSet[#turnsSet + 1] = e.stamp
      end
    elseif fromWait[t] then
      rotAdd[#rotAdd + 1] = fromWait[t]
      rotAdd[#rotAdd + 1] = t
    end
    if e.track then -- listed for its cap: indexed and marked
      anyTrack = true
      concatInto(track, e.track)
      fset[#fset + 1] = TRACK .. lt
      fset[#fset + 1] = '1'
    end
    if e.rf and e.served then -- a token taken
      fset[#fset + 1] = e.rf
      fset[#fset + 1] = bucket(e.tat)
    end
    if e.credit ~= (e.credit0 or 0) then
      if e.credit == 0 then
        fdel[#fdel + 1] = e.cf or ('c' .. lt)
      else
        fset[#fset + 1] = e.cf
        fset[#fset + 1] = string.format('%d', e.credit)
      end
    end
  end
  for _, t in ipairs(woke) do
    if not inE[t] then
      rotAdd[#rotAdd + 1] = fromWait[t]
      rotAdd[#rotAdd + 1] = t
    end
  end
  if anyTrack then -- a mark made: see ANYTRACK
    fset[#fset + 1] = ANYTRACK
    fset[#fset + 1] = '1'
  end
  local nmark = #marks > 0 and capMark(FSTATE, marks, fset, goneBy) or 0
  local recs = np > 0 and redis.call('HMGET', ITEMS, unpack(refs)) or {}
  return {woke = #woke > 0, waitAdd = waitAdd, rotAdd = rotAdd, rotDel = rotDel, np = np, taken = taken,
    refs = refs, recs = recs, turnsSet = turnsSet, L = names, served = served, turn = turn, turn0 = turn0,
    flow = true, capped = capped, fset = fset, fdel = fdel, nmark = nmark, held = held, track = track}
end

-- flowRounds reads the limits of the head tenants L (at most max, with
-- stamps S; woken says whether any came from the waiting set) of a queue
-- with limits, and returns the tenants the plain rounds are to serve when
-- those rounds give exactly what the walk would: no tenant has a weight
-- above 1 or a budget, each rate has tokens for as many items as the
-- claim could give its tenant, and a tenant held now (at its cap, or out
-- of tokens) is passed over, the rounds serving the next tenant of the
-- rotation in its place (one without limits; else the walk decides).
-- Caps and rates are checked again against what the rounds serve. nil
-- when the walk must decide. extra is the tenant after the head, {name,
-- stamp}, read with it (nil when the head is the whole rotation): its
-- limits come with the head's, so one held tenant costs no more reads.
local function flowRounds(L, S, max, freed, woken, extra)
  local now = tonumber(ARGV[1])
  local report = ARGV[10] == '1'
  local n = #L
  local lts = {}
  for i, t in ipairs(L) do
    lts[i] = lp(t)
  end
  if extra then
    lts[n + 1] = lp(extra[1])
  end
  local lims = limitsOf(LIMITS, lts)
  local most = max - n + 1 -- the most items a round-robin claim gives one tenant
  -- rf[i] names tenant i's rate bucket, read now and written back by
  -- claimRead; cap[i] says its new leases go into TLEASES.
  local cap, rf, sf, lazy = {}, {}, {}, nil
  for i = 1, n do
    local Lx = lims[i]
    if Lx then
      if Lx.w > 1 or Lx.width then
        return nil
      end
      if Lx.rate > 0 then
        local f = 'r' .. lts[i]
        rf[i], sf[#sf + 1] = f, f
      end
      if Lx.cap >= LAZYCAP then
        lazy = lazy or {}
        lazy[#lazy + 1] = i
      elseif Lx.cap > 0 then
        cap[i] = true -- always indexed
      end
    end
  end
  -- The rate buckets, and whether any tenant is marked; the marks of the
  -- lazy caps are read only when one may be.
  local tat = {}
  if lazy then
    sf[#sf + 1] = ANYTRACK
  end
  if #sf > 0 then
    local v = redis.call('HMGET', FSTATE, unpack(sf))
    local j = 0
    for i = 1, n do
      if rf[i] then
        j = j + 1
        tat[i] = tonumber(v[j]) or 0
      end
    end
    if lazy and v[#sf] ~= '0' then
      local kf = {}
      for k, i in ipairs(lazy) do
        kf[k] = TRACK .. lts[i]
      end
      local kv = redis.call('HMGET', FSTATE, unpack(kf))
      for k, i in ipairs(lazy) do
        if kv[k] then
          cap[i] = true -- marked: its new leases go into TLEASES
        end
      end
    end
  end
  -- The caps, counted only where they can bind (cap[i]: tenant i's new
  -- leases go into TLEASES; track[i]: its leases listed now, to index),
  -- then the rates; a tenant either holds is passed over.
  local bound, expired, gone, goneBy
  local live, track, marks, held, nheld, pass = {}, nil, nil, {}, 0, nil
  for i = 1, n do
    local Lx = lims[i]
    local why, untl
    if Lx and Lx.cap > 0 then
      -- A cap below the batch can bind whatever the queue holds.
      if Lx.cap >= max then
        bound = bound or redis.call('ZCARD', LEASES) + max
      end
      if Lx.cap < max or bound > Lx.cap then
        if not expired then
          gone, goneBy = {}, {}
          for _, ref in ipairs(freed or {}) do
            local lt = tenantOfRef(ref)
            gone[ref], goneBy[lt] = true, (goneBy[lt] or 0) + 1
          end
          expired = expiredBy(LEASES, ARGV[1], gone)
        end
        local refs
        live[i], refs = capLive(TLEASES, LEASES, lts[i], cap[i], gone, goneBy, expired)
        if refs then
          track = track or {}
          track[i] = refs
        end
        cap[i] = true
        if live[i] >= Lx.cap then
          why, untl = 'cap', 0
          marks = marks or {}
          marks[#marks + 1] = lts[i]
        end
      end
    end
    if not why and Lx and Lx.rate > 0 then
      local t0 = tat[i]
      if not rateAllows(Lx, t0, now) then
        why, untl = 'rate', rateNext(Lx, t0)
      else
        for _ = 2, most do -- the walk's checks, item by item
          t0 = rateTake(Lx, t0, now)
          if not rateAllows(Lx, t0, now) then
            return nil
          end
        end
      end
    end
    if why then
      pass = pass or {}
      nheld, pass[i] = nheld + 1, true
      if report then
        held[#held + 1] = why
        held[#held + 1] = fnum(untl)
      end
    end
  end
  -- fset gathers the index and cap marks this claim makes, and claimRead
  -- adds the rate buckets to it; capped marks the items whose leases go
  -- into TLEASES, made only while some tenant's leases are indexed.
  local F = {names = L, stamps = S, L = lims, cap = cap, live = live, tat = tat, held = held, lts = lts, rf = rf,
    fset = {}, capped = next(cap) and {}}
  if track then
    F.track = {}
    for i = 1, n do
      if track[i] then -- listed for its cap: indexed and marked, held or not
        concatInto(F.track, track[i])
        F.fset[#F.fset + 1] = TRACK .. lts[i]
        F.fset[#F.fset + 1] = '1'
      end
    end
    F.fset[#F.fset + 1] = ANYTRACK
    F.fset[#F.fset + 1] = '1'
  end
  if nheld == 0 then
    lts[n + 1] = nil
    return F
  end
  -- Some are held: the tenants after the head take their places.
  if woken or nheld == n then
    return nil
  end
  -- The tenants served close up in place (F holds the same tables; the
  -- walk, if it decides after all, reads none of them).
  local xlt, xl = lts[n + 1], lims[n + 1]
  local j = 0
  for i = 1, n do
    if not pass[i] then
      j = j + 1
      if j < i then
        L[j], S[j], lims[j], cap[j], live[j], tat[j], lts[j], rf[j] = L[i], S[i], lims[i], cap[i], live[i], tat[i],
          lts[i], rf[i]
      end
    end
  end
  for i = j + 1, n + 1 do
    L[i], S[i], lims[i], cap[i], live[i], tat[i], lts[i], rf[i] = nil, nil, nil, nil, nil, nil, nil, nil
  end
  -- Without extra the head was the whole rotation: nobody takes the
  -- places. One place is extra's; more are read.
  if extra and nheld == 1 then
    if xl then
      return nil
    end
    L[j + 1], S[j + 1], lts[j + 1] = extra[1], tonumber(extra[2]), xlt
  elseif extra then
    local more = redis.call('ZRANGE', ROT, '-inf', '(+inf', 'BYSCORE', 'LIMIT', num(n), num(nheld), 'WITHSCORES')
    local mlts = {}
    for k = 1, #more, 2 do
      mlts[#mlts + 1] = lp(more[k])
    end
    local ml = limitsOf(LIMITS, mlts)
    for k = 1, #mlts do
      if ml[k] then
        return nil
      end
      j = j + 1
      L[j], S[j], lts[j] = more[2 * k - 1], tonumber(more[2 * k]), mlts[k]
    end
  end
  -- The marks are read only once the rounds are sure to serve: when the
  -- walk decides, it marks the held tenants itself.
  if marks then
    F.nmark = capMark(FSTATE, marks, F.fset, goneBy)
  end
  return F
end

-- claimRead does every read and returns either the reply (a replay or
-- an empty claim that changes nothing) or the plan claimWrite carries out.
-- freed (complete_claim) counts, by lp(tenant), the live leases of this
-- queue the same call is completing.
local function claimRead(freed)
  local now = tonumber(ARGV[1])
  local NX = ARGV[2]
  local max = tonumber(ARGV[7])

  -- The memo is the token, ':', then the refs (each lp(tenant) lp(id),
  -- which delimits itself).
  local done = recall(ARGV[9])
  if done then
    local c = string.find(done, ':', 1, true)
    local tok = string.sub(done, 1, c - 1)
    local out = {tonumber(tok)}
    for _, ref in ipairs(refsIn(done, c + 1)) do
      local l = lease(redis.call('HGET', LEASE, ref))
      local rec = l and l.tok == tok and redis.call('HGET', ITEMS, ref)
      if rec then
        out[#out + 1] = rec
      end
    end
    if #out == 1 then
      return {reply = {}}
    end
    return {reply = out}
  end

  -- Lifecycle controls: a paused queue claims nothing; waits that timed
  -- out and prioritised items that fell due are queued first (their own
  -- writes, each complete in itself, before the claim reads the head).
  local life = redis.call('HMGET', LIFE, 'q', 'n', 'p', 'w', 're')
  if life[1] == '1' then
    return {reply = {'paused'}}
  end
  PAUSEN, PRI = (tonumber(life[2]) or 0) > 0, life[3] == '1'
  EVC = tonumber(life[5]) or 0
  if life[4] == '1' then
    endWaits()
  end
  if PRI then
    promoteDue()
  end

  -- A queue without limits runs as it always has, writing the flow
  -- placeholders once if an earlier release created it; one with limits
  -- (FLAG '1') is decided below, once the head is read.
  local flag = redis.call('GET', FLAG)

  -- The rotation's head. Tenants whose delayed items fell due rejoin it
  -- at their stamp.
  -- With limits the head is read one tenant longer: that one takes the
  -- place of a tenant held at the head (flowRounds).
  local L, S = {}, {}
  local head = redis.call('ZRANGE', ROT, '-inf', '(+inf', 'BYSCORE', 'LIMIT', '0', num(flag == '1' and max + 1 or max),
    'WITHSCORES')
  local extra
  if #head > 2 * max then
    extra = {head[2 * max + 1], head[2 * max + 2]}
    head[2 * max + 2], head[2 * max + 1] = nil, nil
  end
  for j = 1, #head, 2 do
    L[#L + 1], S[#S + 1] = head[j], tonumber(head[j + 1])
  end
  local woke = redis.call('ZRANGE', WAIT, '-inf', ARGV[1], 'BYSCORE')
  local fromWait, stamps = {}, nil
  if #woke > 0 then
    stamps = redis.call('HMGET', TURNS, unpack(woke))
    local all = {}
    for j = 1, #L do
      all[j] = {L[j], S[j]}
    end
    for j, t in ipairs(woke) do
      fromWait[t] = stamps[j] or '0'
      all[#all + 1] = {t, tonumber(fromWait[t])}
    end
    table.sort(all, function(a, b)
      if a[2] ~= b[2] then
        return a[2] < b[2]
      end
      return a[1] < b[1]
    end)
    L, S = {}, {}
    for j = 1, math.min(#all, max) do
      L[j], S[j] = all[j][1], all[j][2]
    end
  end
  if #L == 0 then
    return {reply = {}}
  end

  -- A queue with limits takes the walk (claimReadFlow) unless no limit
  -- of the tenants at the head can make it differ from the plain rounds
  -- below: then the rounds run and take their rate tokens.
  if PAUSEN then
    return claimReadFlow(freed, head, woke, stamps) -- the walk passes paused tenants over
  end
  local F
  if flag == '1' then
    F = flowRounds(L, S, max, freed, #woke > 0, #woke == 0 and extra)
    if not F then
      return claimReadFlow(freed, head, woke, stamps)
    end
    L, S = F.names, F.stamps
  end

  -- Plan the rounds.
  local due, pos, fetched, more, lts = {}, {}, {}, {}, {}
  local chunk = math.ceil(max / #L) + 1 -- one more than a round needs: a look at what stays due
  local flts = F and F.lts
  for i, t in ipairs(L) do
    local lt = flts and flts[i] or lp(t)
    local ms = dueRange(lt, NX, 0, chunk)
    lts[i], due[i], pos[i], fetched[i], more[i] = lt, ms, 1, #ms, #ms == chunk
  end
  local turn = tonumber(redis.call('GET', TURN) or '0')
  local turn0 = turn
  local np = 0
  local taken, refs = {}, {} -- READY members and refs of the batch
  local served = {}   -- tenant index -> items taken
  local stamp = {}    -- tenant index -> its last turn
  local touched = {}  -- tenant index -> true when served or found empty
  local active = #L
  while np < max and active > 0 do
    active = 0
    for i = 1, #L do
      if np >= max then
        break
      end
      if pos[i] > #due[i] and more[i] then
        local want = max - np
        local ms = dueRange(lts[i], NX, fetched[i], want)
        due[i], pos[i], fetched[i], more[i] = ms, 1, fetched[i] + #ms, #ms == want
      end
      if pos[i] <= #due[i] then
        local m = due[i][pos[i]]
        pos[i] = pos[i] + 1
        np = np + 1
        taken[np] = m
        refs[np] = memberRef(lts[i], m)
        if F and F.capped and F.cap[i] then
          F.capped[np] = true -- its lease goes into TLEASES
        end
        turn = turn + 1
        stamp[i] = turn
        served[i] = (served[i] or 0) + 1
        touched[i] = true
        active = active + 1
      elseif fetched[i] == 0 then
        touched[i] = true -- in the rotation without a due item (the clock went back)
      end
    end
  end

  if F then
    -- A head tenant without a due item would have let the walk read past
    -- the head; the walk decides that claim.
    if #L == max then
      for i = 1, #L do
        if fetched[i] == 0 then
          return claimReadFlow(freed, head, woke, stamps)
        end
      end
    end
    if next(F.live) then
      for i = 1, #L do
        local Lx = F.L[i]
        if F.live[i] and served[i] and F.live[i] + served[i] > Lx.cap then
          return claimReadFlow(freed, head, woke, stamps) -- the walk stops it at its cap
        end
      end
    end
    local bucket = fnumMemo()
    for i = 1, #L do
      local Lx = F.rf[i] and F.L[i]
      if Lx and served[i] then
        local tat = F.tat[i]
        for _ = 1, served[i] do
          if not rateAllows(Lx, tat, now) then
            return claimReadFlow(freed, head, woke, stamps)
          end
          tat = rateTake(Lx, tat, now)
        end
        F.fset[#F.fset + 1] = F.rf[i]
        F.fset[#F.fset + 1] = bucket(tat)
      end
    end
  end

  -- Where each touched tenant goes: the back of the rotation while it
  -- has a due item left, the waiting set when its first item is delayed,
  -- nowhere when it has none. Untouched tenants woken from the waiting
  -- set join the rotation at their stamp.
  local rotAdd, rotDel, waitAdd, turnsSet = {}, {}, {}, {}
  for i = 1, #L do
    local t, lt = L[i], lts[i]
    if touched[i] then
      local left = pos[i] <= #due[i]
      if not left and more[i] then
        left = #dueRange(lt, NX, fetched[i], 1) > 0
      end
      if left then
        rotAdd[#rotAdd + 1] = stamp[i] and num(stamp[i]) or S[i]
        rotAdd[#rotAdd + 1] = t
      else
        local f = redis.call('ZRANGE', READY, '[' .. lt .. NX, '(' .. lt .. 'g', 'BYLEX', 'LIMIT', '0', '1')[1]
        if not fromWait[t] then
          rotDel[#rotDel + 1] = t
        end
        if f then
          waitAdd[#waitAdd + 1] = dueOf(lt, f)
          waitAdd[#waitAdd + 1] = t
        end
      end
      if stamp[i] then
        turnsSet[#turnsSet + 1] = t
        turnsSet[#turnsSet + 1] = num(stamp[i])
      end
    elseif fromWait[t] then
      rotAdd[#rotAdd + 1] = fromWait[t]
      rotAdd[#rotAdd + 1] = t
    end
  end
  if #woke > 0 then
    -- Woken tenants the batch could not reach go back to their turn too.
    local inL = {}
    for i = 1, #L do
      inL[L[i]] = true
    end
    for _, t in ipairs(woke) do
      if not inL[t] then
        rotAdd[#rotAdd + 1] = fromWait[t]
        rotAdd[#rotAdd + 1] = t
      end
    end
  end
  local recs = np > 0 and redis.call('HMGET', ITEMS, unpack(refs)) or {}
  if F then
    return {woke = #woke > 0, waitAdd = waitAdd, rotAdd = rotAdd, rotDel = rotDel, np = np, taken = taken,
      refs = refs, recs = recs, turnsSet = turnsSet, L = L, served = served, turn = turn, turn0 = turn0,
      flow = true, capped = F.capped, fset = F.fset, nmark = F.nmark, held = F.held, track = F.track}
  end
  return {woke = #woke > 0, waitAdd = waitAdd, rotAdd = rotAdd, rotDel = rotDel, np = np, taken = taken,
    refs = refs, recs = recs, turnsSet = turnsSet, L = L, served = served, turn = turn, turn0 = turn0,
    mkflow = not flag}
end

local function claimLease(c)
  if c.reply then
    return c.reply
  end
  if c.woke then
    redis.call('ZREMRANGEBYSCORE', WAIT, '-inf', ARGV[1])
  end
  if #c.waitAdd > 0 then
    redis.call('ZADD', WAIT, unpack(c.waitAdd))
  end
  if #c.rotAdd > 0 then
    redis.call('ZADD', ROT, unpack(c.rotAdd))
  end
  if #c.rotDel > 0 then
    redis.call('ZREM', ROT, unpack(c.rotDel))
  end
  if c.fset and #c.fset > 0 then
    redis.call('HSET', FSTATE, unpack(c.fset))
  end
  if c.nmark and c.nmark > 0 then
    redis.call('HINCRBY', FSTATE, NMARKS, c.nmark)
  end
  if c.track and #c.track > 0 then
    zaddRefs(TLEASES, c.track)
  end
  if c.fdel and #c.fdel > 0 then
    redis.call('HDEL', FSTATE, unpack(c.fdel))
  end
  if c.np == 0 then
    return {}
  end
  redis.call('ZREM', READY, unpack(c.taken))
  if #c.turnsSet > 0 then -- a weighted tenant part-way through its turn keeps its stamp
    redis.call('HSET', TURNS, unpack(c.turnsSet))
  end
  -- The turns served: one HINCRBY for a lone tenant, one HMGET and one
  -- HSET for several (a HINCRBY each would be one call per tenant).
  local sn, sby = {}, {}
  for i = 1, #c.L do
    if c.served[i] then
      sn[#sn + 1], sby[#sby + 1] = c.L[i], c.served[i]
    end
  end
  if #sn == 1 then
    redis.call('HINCRBY', SERVED, sn[1], num(sby[1]))
  elseif #sn > 1 then
    local cur, set = redis.call('HMGET', SERVED, unpack(sn)), {}
    for j, t in ipairs(sn) do
      set[2 * j - 1], set[2 * j] = t, string.format('%d', (tonumber(cur[j]) or 0) + sby[j])
    end
    redis.call('HSET', SERVED, unpack(set))
  end
  if c.turn ~= c.turn0 then
    redis.call('SET', TURN, num(c.turn))
  end

  -- Lease the items: one HSET of the lease hash and one ZADD for the
  -- batch. A member whose record is gone (none should be) is dropped.
  -- With limits, the leases of tenants under a cap go into TLEASES.
  local out, got, tm = {0}, {}, {}
  for k = 1, c.np do
    local rec = c.recs[k]
    if rec then
      local j = #got + 1
      got[j], out[j + 1] = c.refs[k], rec
      if c.capped and c.capped[k] then
        tm[#tm + 1] = '0'
        tm[#tm + 1] = c.refs[k]
      end
    end
  end
  local n = #got
  if n == 0 then
    return {}
  end
  if #tm > 0 then
    redis.call('ZADD', TLEASES, unpack(tm))
  elseif c.mkflow then
    -- The flow keys' placeholders (see the prelude), for a queue an
    -- earlier release created.
    redis.call('SET', FLAG, '0')
    redis.call('HSET', LIMITS, '', WIDE)
    redis.call('HSET', FSTATE, '', WIDE)
    redis.call('ZADD', TLEASES, '0', '')
  end
  local tok, stok = nextToken()
  out[1] = tok
  local val = stok .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|||' .. ARGV[6]
  local lv, lz = {}, {}
  for j = 1, n do
    lv[2 * j - 1], lv[2 * j] = got[j], val
    lz[2 * j - 1], lz[2 * j] = ARGV[4], got[j]
  end
  redis.call('HSET', LEASE, unpack(lv))
  local all = table.concat(got)
  remember(ARGV[9], stok .. ':' .. all)
  redis.call('ZADD', LEASES, unpack(lz))
  if EVC > 0 then
    -- A claimed event per item: its execution is its attempts so far
    -- plus one. Only that differs from item to item, so the event is
    -- the batch's head and tail around it (ev's fields, in order), and
    -- each distinct count is made once.
    local E = newEvents({ev = EVC}, QK, ARGV[3])
    local head, tail = lp('claimed') .. lp(ARGV[3]) .. lp(ARGV[6]), lp(stok) .. '0:0:0:0:0:'
    local execs = {}
    for j = 1, n do
      local a = recAttempts(out[j + 1])
      if not a then
        local r = decode(out[j + 1])
        a = r and r.a
      end
      if a then
        local x = execs[a]
        if not x then
          x = lp(string.format('%d', tonumber(a) + 1))
          execs[a] = x
        end
        evAdd(E, got[j], head .. x .. tail)
        E.claim[got[j]] = ARGV[3]
      end
    end
    evFlush(E)
  end
  -- One log entry per claim; the log keeps as many claims as turns are
  -- wanted (each claim holds one turn or more), trimmed in steps of 64.
  local keep = tonumber(ARGV[8])
  if redis.call('LPUSH', LOG, lp(ARGV[6]) .. lp(ARGV[3]) .. all) > keep + 64 then
    redis.call('LTRIM', LOG, 0, keep - 1)
  end
  return out
end

-- claimWrite carries out the plan and adds the report of held tenants.
local function claimWrite(c)
  local out = claimLease(c)
  if c.held and #c.held > 0 then
    out[#out + 1] = c.held
  end
  return out
end

local function claim()
  return claimWrite(claimRead())
end
