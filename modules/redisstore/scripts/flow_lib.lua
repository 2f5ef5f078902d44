-- Flow control helpers shared by the scripts that read or keep a queue's
-- limits (flow.go writes the same encodings from Go). They only define
-- locals and take the keys they read as arguments, so scripts without the
-- queue prelude (complete) can use them too.
--
-- A limits row is 'maxLeased|rate|burst|weight|costMicros|tokens|windowMs'
-- (rate in Go's shortest float form, the rest whole numbers). The rate
-- bucket is a theoretical arrival time in unix microseconds, as
-- contract.RateBucket keeps it. A budget field is the slot width (ms) it
-- was kept in, then '|slot:cost:tokens' per slot that has charges; slot n
-- covers [n*width, (n+1)*width) ms of unix time.
--
-- Lua numbers are doubles: usage sums and ceilings are exact up to 2^53.

-- flowLimits decodes a limits row, nil for none. It adds the effective
-- burst and the microseconds a token takes (T) when there is a rate, and
-- the slot width when there is a budget.
local function flowLimits(s)
  if not s or s == '' then
    return nil
  end
  local m, r, b, w, c, t, win = string.match(s, '^(%d+)|([^|]+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)$')
  if not m then
    return nil
  end
  local L = {cap = tonumber(m), rate = tonumber(r) or 0, w = tonumber(w), cost = tonumber(c), tok = tonumber(t)}
  if L.w < 1 then
    L.w = 1
  end
  if L.rate > 0 then
    local burst = tonumber(b)
    if burst <= 0 then
      burst = math.max(1, math.ceil(L.rate))
    end
    L.burst = burst
    L.T = 1e6 / L.rate
  end
  if L.cost > 0 or L.tok > 0 then
    L.width = math.floor(tonumber(win) / 10)
  end
  return L
end

-- The rate bucket: same arithmetic as contract.RateBucket.
local function rateAllows(L, tat, now)
  return tat - now <= (L.burst - 1) * L.T + 1e-6
end

local function rateTake(L, tat, now)
  return math.max(tat, now) + L.T
end

local function rateNext(L, tat)
  return tat - (L.burst - 1) * L.T
end

-- fnum writes a number so that tonumber (and Go's ParseFloat) read the
-- same double back. A whole number below 2^53 (a rate bucket at a rate
-- that divides a second into whole microseconds) has the same digits
-- either way, and '%d' is the cheaper format.
local function fnum(x)
  if x >= 0 and x < 9007199254740992 and x == math.floor(x) then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end

-- fnumMemo returns fnum with a memory of the last number it wrote: the
-- rate buckets one claim writes back often end alike (tenants whose
-- buckets were full, served one item each), and those are formatted once.
local function fnumMemo()
  local last, s
  return function(x)
    if x ~= last then
      last, s = x, fnum(x)
    end
    return s
  end
end

-- budgetSlots decodes a budget field into slot -> {cost, tokens}. Slots
-- kept in another width (the window changed since) are not counted: a
-- new window starts the count afresh, as on every backing.
local function budgetSlots(s, width)
  local out = {}
  if not s or s == '' then
    return out
  end
  if tonumber(string.match(s, '^(%d+)')) ~= width then
    return out
  end
  for sl, c, t in string.gmatch(s, '|(%-?%d+):(%d+):(%d+)') do
    local k = tonumber(sl)
    local e = out[k]
    if not e then
      e = {0, 0}
      out[k] = e
    end
    e[1] = e[1] + tonumber(c)
    e[2] = e[2] + tonumber(t)
  end
  return out
end

-- budgetUsed sums the slots s-10 .. s.
local function budgetUsed(slots, s)
  local c, t = 0, 0
  for k = s - 10, s do
    local e = slots[k]
    if e then
      c, t = c + e[1], t + e[2]
    end
  end
  return c, t
end

local function overBudget(L, c, t)
  return (L.cost > 0 and c >= L.cost) or (L.tok > 0 and t >= L.tok)
end

-- budgetRelease is when (unix ms) a budget hold in slot s ends if nothing
-- more is charged: the start of the first later slot whose window no
-- longer reaches a ceiling.
local function budgetRelease(L, slots, s)
  for k = s + 1, s + 11 do
    local c, t = budgetUsed(slots, k)
    if not overBudget(L, c, t) then
      return k * L.width
    end
  end
  return (s + 11) * L.width
end

local function budgetSlot(L, nowMs)
  return math.floor(nowMs / L.width)
end

-- budgetEncode writes slots (of width) back, dropping those before s-10.
local function budgetEncode(slots, width, s)
  local ks = {}
  for k in pairs(slots) do
    if k >= s - 10 then
      ks[#ks + 1] = k
    end
  end
  table.sort(ks)
  local parts = {string.format('%d', width)}
  for _, k in ipairs(ks) do
    local e = slots[k]
    parts[#parts + 1] = string.format('|%d:%d:%d', k, e[1], e[2])
  end
  return table.concat(parts)
end

-- tenantOfRef is the lp(tenant) a ref starts with.
local function tenantOfRef(ref)
  local c = string.find(ref, ':', 1, true)
  return string.sub(ref, 1, c + tonumber(string.sub(ref, 1, c - 1)))
end

-- tenantLeases counts lt's leases in tleases: every lease of the tenant,
-- expired or not (a ref is lt then lp(id), which begins with a digit, so
-- the tenant's refs end before lt..';').
local function tenantLeases(tleases, lt)
  return redis.call('ZLEXCOUNT', tleases, '[' .. lt, '(' .. lt .. ';')
end

-- TRACK starts a tenant's index mark in FSTATE: 'k'..lp(t) is set once
-- every lease of t is in TLEASES, and from then on each claim puts t's
-- new leases there. A tenant whose cap is LAZYCAP or more goes unmarked
-- until its cap can bind in a claim (capLive): until then no claim counts
-- its leases or writes them to the index, so a cap far above the queue's
-- leases costs nothing per claim. A smaller cap binds soon and cheaply
-- enough to list, so its tenant's leases are always indexed, without a
-- mark. set_limits rebuilds TLEASES with every capped tenant's leases,
-- which keeps the marks true.
local TRACK = 'k'
local LAZYCAP = 1000

-- ANYTRACK is FSTATE's field that says whether any tenant carries a
-- TRACK mark: '0' none (set_limits writes it when it turns flow on, and
-- marks only exist while flow is on), '1' once a claim marked one (in the
-- same HSET as the mark). Absent, for a queue whose flow an earlier
-- release turned on, it says nothing and the marks are read. While it is
-- '0' the plain rounds read no mark at all.
local ANYTRACK = '!k'

-- capLive counts lt's live leases for a cap that can bind in this claim,
-- leaving out the refs in gone (goneBy counts them by tenant) and the
-- expired ones (expired, by tenant). A marked tenant's leases are all in
-- tleases: one ZLEXCOUNT. An unmarked one's are listed from leases (every
-- lease of the queue), and returned too, for the claim to add them to
-- tleases and mark the tenant: a tenant is listed once.
local function capLive(tleases, leases, lt, tracked, gone, goneBy, expired)
  if tracked then
    return tenantLeases(tleases, lt) - (goneBy[lt] or 0) - (expired[lt] or 0), nil
  end
  local refs = {}
  for _, ref in ipairs(redis.call('ZRANGE', leases, 0, -1)) do
    if not gone[ref] and string.find(ref, lt, 1, true) == 1 then -- ref is lp(tenant)..lp(id)
      refs[#refs + 1] = ref
    end
  end
  return #refs - (expired[lt] or 0), refs
end

-- zaddRefs adds refs to the zset key at score 0, 1,000 at a time.
local function zaddRefs(key, refs)
  local batch = {}
  for _, ref in ipairs(refs) do
    batch[#batch + 1] = '0'
    batch[#batch + 1] = ref
    if #batch >= 2000 then
      redis.call('ZADD', key, unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then
    redis.call('ZADD', key, unpack(batch))
  end
end

-- expiredBy counts, by lp(tenant), the leases in leases that expired by
-- now (us, decimal string) and are not yet reaped, leaving out the refs
-- in skip (a set, or nil). Usually there are none, and then this is one
-- empty ZRANGE.
local function expiredBy(leases, now, skip)
  local out = {}
  for _, ref in ipairs(redis.call('ZRANGE', leases, '-inf', now, 'BYSCORE')) do
    if not (skip and skip[ref]) then
      local lt = tenantOfRef(ref)
      out[lt] = (out[lt] or 0) + 1
    end
  end
  return out
end

-- limitsOf reads the effective limits of the tenants lts (lp form) from
-- limits: each one's own row, else the default, else nil. Rows are
-- decoded once per distinct value (tenants often share theirs).
-- (A claim calls it for every tenant it reads, so it makes no table it
-- can do without: the reply is the result, and a row like the one before
-- it, the common case, is not looked up.)
local function limitsOf(limits, lts)
  local v = redis.call('HMGET', limits, '0:', unpack(lts))
  local dflt = flowLimits(v[1])
  local memo, last, lastL
  for i = 1, #lts do
    local raw = v[i + 1]
    local L = dflt
    if raw == last then
      L = lastL
    elseif raw then
      memo = memo or {}
      L = memo[raw]
      if L == nil then
        L = flowLimits(raw) or dflt
        memo[raw] = L
      end
      last, lastL = raw, L
    end
    v[i] = L
  end
  v[#lts + 1] = nil
  return v
end

-- The cap wake marks. A claim that passes tenant t over for its cap
-- marks t, setting FSTATE's field MARK..lp(t); the complete, fail or reap
-- that next ends a lease of t drops the mark and wakes the queue's
-- claimers (a snooze or a wait wakes them whenever the queue has limits).
-- NMARKS counts the marks, so ending leases costs one HMGET while nobody
-- is marked, and one more, of the marks of the ended leases' tenants,
-- while some are: never a pass over every marked tenant, however many a
-- cap holds back. (Releases before this one listed every mark in the one
-- field OLDMARKS. One still there is taken as a mark of every tenant:
-- the next lease to end wakes the claimers and drops it.)
local MARK, NMARKS, OLDMARKS = 'h', '!m', '!h'

-- capMarked finds the marks of the tenants whose leases refs end: the
-- FSTATE fields to drop (capUnmark), none when no claimer is to be woken;
-- hit counts those that are marks of tenants.
local function capMarked(fstate, refs)
  local v = redis.call('HMGET', fstate, NMARKS, OLDMARKS)
  local out = {hit = 0}
  if v[2] then
    out[1] = OLDMARKS
  end
  if (tonumber(v[1]) or 0) <= 0 then
    return out
  end
  local f, seen = {}, {}
  for _, ref in ipairs(refs) do
    local lt = tenantOfRef(ref)
    if not seen[lt] then
      seen[lt] = true
      f[#f + 1] = MARK .. lt
    end
  end
  local mv = redis.call('HMGET', fstate, unpack(f))
  for i = 1, #f do
    if mv[i] then
      out[#out + 1] = f[i]
      out.hit = out.hit + 1
    end
  end
  return out
end

-- capUnmark drops the marks capMarked found.
local function capUnmark(fstate, marks)
  if #marks == 0 then
    return
  end
  redis.call('HDEL', fstate, unpack(marks))
  if marks.hit > 0 then
    redis.call('HINCRBY', fstate, NMARKS, -marks.hit)
  end
end

-- capMark marks the tenants lts (lp names, each once) a claim holds for
-- their caps: it adds the new marks to fset (field, value pairs for the
-- claim's one HSET of FSTATE) and returns how many, for the claim to add
-- to NMARKS. A tenant in ending (by lp name: those whose leases the
-- complete half of the same call ends; that half drops their marks, and
-- writes first) is marked anew.
local function capMark(fstate, lts, fset, ending)
  local f = {}
  for i, lt in ipairs(lts) do
    f[i] = MARK .. lt
  end
  local v = redis.call('HMGET', fstate, unpack(f))
  local k = 0
  for i, lt in ipairs(lts) do
    if not v[i] or (ending and ending[lt]) then
      fset[#fset + 1] = f[i]
      fset[#fset + 1] = '1'
      k = k + 1
    end
  end
  return k
end
