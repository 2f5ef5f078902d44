-- Shared prelude of the queue scripts (prepended to each when loaded).
--
-- Every key a queue script touches is declared: KEYS[1..31] are the keys
-- of one queue and its namespace, in the order below (the lifecycle keys
-- LIFE..PDELAY come after TOKEN and QUEUES, the history keys FIN..ELOG
-- last; history_lib.lua describes them) (keys.go builds the list). Redis Cluster then routes the script by all of them, and while
-- the queue's slot is being migrated it refuses the call whole (ASK or
-- TRYAGAIN, which the caller retries) unless every key is on the node it
-- reached. Inside the script a key that does not exist at that moment is
-- refused too, so no queue key may vanish mid-script: every set and hash
-- below that can run empty keeps a placeholder entry, the empty string,
-- written by the first enqueue and never removed (scores that keep it out
-- of every range the scripts read: +inf, or -1 in the dead set). The lists
-- and counters are never emptied once written.
--
--   READY    zset  every queued item, score 0, member lp(tenant) then the
--                  due time (us) and the ready seq as 16 hex digits each,
--                  then the ref: one tenant's items, in due order, are the
--                  lex range from lp(tenant), and its due ones end before
--                  lp(tenant)..hex(now+1)
--   ROT      zset  tenants with a due item, by turn stamp
--   WAIT     zset  tenants whose items are all delayed, by first due time (us)
--   TURNS    hash  tenant -> turn stamp (its place in the rotation)
--   TURN     string  the last stamp given
--   SEQ      string  orders ready items and dead letters
--   ITEMS    hash  ref -> the item record (ref = lp(tenant)..lp(id)),
--                  length-prefixed fields (record_lib.lua); its state says
--                  queued or dead, never leased
--   LEASE    hash  ref -> 'token|expiry us|expiry ns|previous token|
--                  heartbeat nonce|worker' while the item is leased; its
--                  placeholder's value is WIDE (see widen)
--   LEASES   zset  leased refs by expiry (us), and WIDE at +inf
--                  (ROT, TURNS and SERVED below hold WIDE too)
--   DEAD     zset  dead refs by dead seq
--   TDEAD    zset  dead letters by tenant: score 0, member lp(tenant),
--                  the dead seq as 16 hex digits, then the ref
--   SERVED   hash  tenant -> turns served
--   TENANTS  set   tenants that ever had an item
--   LOG      list  recent claims, newest first: each lp(worker) lp(unix ns)
--                  then the refs it served, in turn order
--   CLAIMS   hash  claim nonce -> the refs and tokens it leased;
--                  'done:'..nonce -> the lost positions of a
--                  complete_claim call's complete half
--   RECENT   list  the nonces in CLAIMS, newest first (1024 kept)
--   FLAG     string  '1' while the queue has any limits row, else '0': the
--                  claim takes the flow path only when it reads '1'
--   LIMITS   hash  lp(tenant) -> its limits, '0:' (lp of '') -> the
--                  queue's default (encoding in flow_lib.lua)
--   FSTATE   hash  per tenant flow state: 'r'..lp(t) rate bucket TAT (us),
--                  'c'..lp(t) weight credit, 'b'..lp(t) budget slots,
--                  'k'..lp(t) '1' once all of t's leases are in TLEASES,
--                  'h'..lp(t) '1' while t is marked for a cap wake, '!m'
--                  how many such marks there are (MARK in flow_lib.lua),
--                  '!k' '1' once any tenant is marked 'k', '0' while none
--                  is (ANYTRACK in flow_lib.lua)
--   TLEASES  zset  while FLAG is '1': refs of leases of tenants whose
--                  effective limits have a cap, score 0: every lease of
--                  a tenant marked in FSTATE, so its leases are one
--                  ZLEXCOUNT (less its expired ones, which LEASES gives
--                  by score). A tenant's leases are indexed, and it is
--                  marked, the first time a claim finds its cap can bind
--                  (see capLive in flow_lib.lua).
--   LIFE     hash  lifecycle controls: 'q' '1' while the queue is paused,
--                  't'..lp(t) '1' while tenant t is, 'n' how many tenants
--                  are, 'p' '1' once any item had a priority (the claim
--                  then reads the priority sections), 'w' '1' once any
--                  item waited (the claim then ends the waits that timed
--                  out), 'm' how many leases carry a cancel mark, 'wd'
--                  '1' once the queue's keys were widened (see widen)
--   WAITS    zset  waiting refs by when their wait times out (us)
--   PARKED   zset  waiting refs by when they began to wait (us)
--   CANCELS  zset  cancelled refs by when they were cancelled (us)
--   PDELAY   zset  READY members of delayed prioritised items, by due (us)
--   TOKEN    string  the last fencing token (namespace-wide; see nextToken)
--   QUEUES   set   queue names
--
-- Times: scores are unix microseconds (exact in a double until year 2255);
-- lease fields ending in 'n' and record fields ea/da/nb are unix nanoseconds kept
-- as strings, never used in arithmetic here. Numbers computed in Lua are
-- passed back to redis.call as strings made with '%d', because Redis
-- formats a Lua number with 14 significant digits.
--
-- Each script reads everything it decides on before its first write: a
-- Redis script does not roll back, so a script that stops half-way (an
-- error, a refused key) must have written nothing.
local READY, ROT, WAIT, TURNS, TURN, SEQ, ITEMS, LEASE, LEASES, DEAD, TDEAD, SERVED, TENANTS, LOG, CLAIMS, RECENT,
  FLAG, LIMITS, FSTATE, TLEASES, TOKEN, QUEUES = unpack(KEYS, 1, 22)
local LIFE, WAITS, PARKED, CANCELS, PDELAY = unpack(KEYS, 23, 27)
local FIN, IDS, EVS, ELOG = unpack(KEYS, 28, 31)

-- WIDE is longer than 64 bytes and starts with a NUL byte, which no ref
-- (it starts with a digit) and no tenant name (names may not hold one)
-- does. Redis keeps a hash or sorted set with few short entries as one
-- packed list, which it searches and shifts end to end on every write:
-- LEASE and LEASES hold one entry per live lease (about a hundred for ten
-- workers claiming ten each), ROT, TURNS and SERVED one per tenant, and a
-- claim or complete writes ten of them at a time, at 2-3 times what the
-- hashed encodings cost. One entry longer than 64 bytes moves a key to
-- the hashed encoding for good (an RDB load or a slot migration keeps it
-- there too).
local WIDE = '\0no item: an entry over 64 bytes keeps this key out of the packed encoding'

-- widen writes WIDE into LEASE (as its placeholder's value), LEASES and
-- ROT (members at +inf, outside every range the scripts read), TURNS and
-- SERVED (fields valued '0', what a tenant without one reads), and marks
-- LIFE. The first enqueue of a queue does it, and so does the next enqueue
-- of a queue an earlier release created.
local function widen()
  redis.call('HSET', LEASE, '', WIDE)
  redis.call('ZADD', LEASES, '+inf', WIDE)
  redis.call('ZADD', ROT, '+inf', WIDE)
  redis.call('HSET', TURNS, WIDE, '0')
  redis.call('HSET', SERVED, WIDE, '0')
  redis.call('HSET', LIFE, 'wd', '1')
end

-- refsIn splits s from position pos into refs (each lp(tenant) lp(id),
-- so a run of them needs no separator).
local function refsIn(s, pos)
  local out = {}
  while pos <= #s do
    local start = pos
    for _ = 1, 2 do
      local c = string.find(s, ':', pos, true)
      pos = c + 1 + tonumber(string.sub(s, pos, c - 1))
    end
    out[#out + 1] = string.sub(s, start, pos - 1)
  end
  return out
end

-- Memos of recent calls, by nonce, so a retry after a lost reply replays
-- the first outcome: the last 1024 are kept (CLAIMS, with their order in
-- RECENT).
local function recall(nonce)
  return redis.call('HGET', CLAIMS, nonce)
end

local function remember(nonce, memo)
  redis.call('HSET', CLAIMS, nonce, memo)
  if redis.call('LPUSH', RECENT, nonce) > 1024 then
    redis.call('HDEL', CLAIMS, redis.call('RPOP', RECENT))
  end
end

-- nextToken issues a fencing token: one more than the last, and never
-- below the server clock in microseconds. The floor is what keeps a token
-- from being issued twice when the server comes back with less than it
-- acknowledged (an everysec AOF after a host crash loses up to a second,
-- a promoted replica what it had not received): the counter rolls back
-- with the data, the clock does not, and the counter cannot run ahead of
-- it (that would take a million claims a second). It returns the token as
-- a number and as the decimal string the lease keeps (Lua's own number
-- format would print 16 digits as 1.8e+15).
local function nextToken()
  local tok = redis.call('INCR', TOKEN)
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if tok < floor then
    tok = floor
    redis.call('SET', TOKEN, string.format('%d', floor))
  end
  return tok, string.format('%d', tok)
end

-- Lease state lives in one hash per queue rather than in each record, so a
-- batch claim writes it with one HSET and a batch complete reads it with
-- one HMGET.
local function lease(v)
  if not v then
    return nil
  end
  local tok, x, xn, hp, hn, w = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d*)|([^|]*)|(.*)$')
  if not tok then
    return nil
  end
  return {tok = tok, x = x, xn = xn, hp = hp, hn = hn, w = w}
end

-- hex16 is n (a whole number below 2^53) as 16 hex digits, the width of
-- the due times and seqs in READY and TDEAD members.
local function hex16(n)
  return string.format('%016x', n)
end

-- PRANK memoises each priority's section prefix ('p' and its rank): it is
-- declared apart from its value, so the table is made once, at the load,
-- and kept from call to call (it holds nothing of any call, and there are
-- at most 2 * contract.MaxPriority + 1 priorities).
local PRANK
PRANK = {}

-- The priority section of a tenant's items in READY: due items with a
-- priority other than 0, members lp(t) 'p' rank (2 hex digits, 100 -
-- priority, so higher priorities sort first) then the due time and seq
-- (32 hex digits) and the ref. 'p' sorts after every hex digit and after
-- 'g', so no plain range of the tenant reaches the section: a claim reads
-- it only when the queue's LIFE flag 'p' says priorities were used.
-- Ranks below 100 come before the tenant's plain due items, those above
-- after them.
local function pMember(lt, pr, dueSeq, ref)
  local rk = PRANK[pr]
  if not rk then
    rk = 'p' .. string.format('%02x', 100 - tonumber(pr))
    PRANK[pr] = rk
  end
  return lt .. rk .. dueSeq .. ref
end

-- refOfMember is the ref a READY member of lp(t) = lt ends with.
local function refOfMember(lt, m)
  if string.byte(m, #lt + 1) == 112 then -- 'p'
    return string.sub(m, #lt + 36)
  end
  return string.sub(m, #lt + 33)
end

-- firstOf returns the first queued member of tenant t (lp(t) is lt), or
-- nil: its due time is the 16 hex digits after lt.
local function firstOf(lt)
  return redis.call('ZRANGE', READY, '[' .. lt, '(' .. lt .. 'g', 'BYLEX', 'LIMIT', '0', '1')[1]
end

local function dueOf(lt, m)
  return string.format('%d', tonumber(string.sub(m, #lt + 1, #lt + 16), 16))
end

-- Pushes queue items back for several tenants at once (a settle that
-- retries, a requeue of dead letters): add and plan read what each
-- tenant's place depends on, apply writes it. A tenant that had no queued
-- work takes a new stamp (the back of the rotation); one that had keeps
-- its place.
local function newPushes()
  return {order = {}, by = {}, members = {}}
end

-- add records that item ref, whose decoded record is r, goes back to the
-- queue due at due (us, decimal string), also given as 16 hex digits dx;
-- seq is its new ready seq. It sets r.s and r.m; the caller writes the
-- record.
local function add(P, r, ref, due, dx, seq)
  local t = r.t
  local g = P.by[t]
  if not g then
    g = {lt = lp(t)}
    P.by[t] = g
    P.order[#P.order + 1] = t
  end
  r.s = 'q'
  local pr = xprio(r)
  if pr ~= '' and pr ~= '0' and P.now then
    -- A prioritised item: due, it goes to its tenant's priority section
    -- (pMember); delayed, it waits in the plain order and in PDELAY,
    -- which the claim drains into the section as it falls due.
    P.pri = true
    if tonumber(due) <= P.now then
      r.m = pMember(g.lt, pr, dx .. hex16(seq), ref)
    else
      r.m = g.lt .. dx .. hex16(seq) .. ref
      P.pdelay = P.pdelay or {}
      P.pdelay[#P.pdelay + 1] = due
      P.pdelay[#P.pdelay + 1] = r.m
    end
  else
    r.m = g.lt .. dx .. hex16(seq) .. ref
  end
  local ms = P.members
  ms[#ms + 1] = '0'
  ms[#ms + 1] = r.m
  if not g.min or tonumber(due) < tonumber(g.min) then
    g.min = due
  end
end

-- plan reads, per tenant, whether it is placed (in the rotation or
-- waiting), its stamp and its first queued item.
local function plan(P)
  for _, t in ipairs(P.order) do
    local g = P.by[t]
    g.rot = redis.call('ZSCORE', ROT, t)
    if not g.rot then
      g.wait = redis.call('ZSCORE', WAIT, t)
      g.stamp = redis.call('HGET', TURNS, t)
      local f = firstOf(g.lt)
      if f then
        local d = dueOf(g.lt, f)
        if tonumber(d) < tonumber(g.min) then
          g.min = d
        end
      end
    end
  end
end

-- apply writes what add and plan worked out, now being the current time
-- (us, a number).
local function apply(P, now)
  if #P.members == 0 then
    return
  end
  redis.call('ZADD', READY, unpack(P.members))
  if P.pri then
    -- The claim reads PDELAY from now on: its placeholder, for a queue
    -- an earlier release created (LIFE's is the flag itself). A caller
    -- that read the flag set already (P.pset) skips both: the flag is
    -- only ever set with the placeholder, and neither is ever removed.
    if not P.pset then
      redis.call('ZADD', PDELAY, 'NX', '+inf', '')
      redis.call('HSET', LIFE, 'p', '1')
    end
    if P.pdelay then
      redis.call('ZADD', PDELAY, unpack(P.pdelay))
    end
  end
  for _, t in ipairs(P.order) do
    local g = P.by[t]
    if not g.rot then
      local stamp = g.stamp
      if not g.wait then
        stamp = redis.call('INCR', TURN)
        redis.call('HSET', TURNS, t, stamp)
      end
      if tonumber(g.min) <= now then
        redis.call('ZADD', ROT, stamp or 0, t)
        if g.wait then
          redis.call('ZREM', WAIT, t)
        end
      else
        redis.call('ZADD', WAIT, g.min, t)
      end
    end
  end
end
