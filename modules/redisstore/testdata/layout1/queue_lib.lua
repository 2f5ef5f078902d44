-- Shared prelude of the queue scripts (prepended to each when loaded).
--
-- Every queue script takes ARGV[1] = the queue's key prefix Q and
-- ARGV[2] = the namespace prefix NS; both carry the namespace hash tag, so
-- every key below lives in one cluster slot.
--
-- Keys of a queue:
--   Q..'rot'            zset  tenants with a due item, by turn stamp
--   Q..'wait'           zset  tenants whose items are all delayed, by first due time (us)
--   Q..'turns'          hash  tenant -> turn stamp (its place in the rotation)
--   Q..'turn'           string  the last stamp given
--   Q..'seq'            string  orders ready items and dead letters
--   Q..'ready:'..lp(t)  zset  a tenant's queued items: score due (us), member
--                             seq (16 hex digits) then ref
--   Q..'items'          hash  ref -> the item record (ref = lp(tenant)..lp(id)),
--                             length-prefixed fields in RECORD order; its
--                             state says queued or dead, never leased
--   Q..'lease'          hash  ref -> 'token|expiry us|expiry ns|previous token|
--                             heartbeat nonce|worker' while the item is leased
--   Q..'leases'         zset  leased refs by expiry (us)
--   Q..'dead'           zset  dead refs by dead seq; Q..'dead:'..lp(t) per tenant
--   Q..'served'         hash  tenant -> turns served
--   Q..'tenants'        set   tenants that ever had an item
--   Q..'log'            list  recent claims, newest first: each lp(worker)
--                             lp(unix ns) then the refs it served, in turn order
--   Q..'claims'         hash  claim nonce -> the refs and tokens it leased;
--                             'done:'..nonce -> the lost positions of a
--                             complete_claim call's complete half
--   Q..'claimlog'       list  the nonces in Q..'claims', newest first (1024 kept)
--   NS..'token'         string  the last fencing token (namespace-wide; see nextToken)
--   NS..'queues'        set   queue names
--
-- Times: scores are unix microseconds (exact in a double until year 2255);
-- lease fields ending in 'n' and record fields ea/da/nb are unix nanoseconds kept
-- as strings, never used in arithmetic here. Numbers computed in Lua are
-- only ever small counters, because Redis formats Lua numbers with limited
-- precision when they are passed back to redis.call.
local function lp(s) return #s .. ':' .. s end
local Q, NS = ARGV[1], ARGV[2]
local ROT, WAIT, TURNS, LEASES, DEAD = Q .. 'rot', Q .. 'wait', Q .. 'turns', Q .. 'leases', Q .. 'dead'
local function kready(t) return Q .. 'ready:' .. lp(t) end
local function kdead(t) return Q .. 'dead:' .. lp(t) end
local ITEMS, LEASE = Q .. 'items', Q .. 'lease'

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
-- the first outcome: the last 1024 are kept (Q..'claims', with their order
-- in Q..'claimlog').
local CLAIMS, RECENT = Q .. 'claims', Q .. 'claimlog'

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
-- acknowledged (an everysec AOF after a host crash loses up to a second):
-- the counter rolls back with the data, the clock does not, and the
-- counter cannot run ahead of it (that would take a million claims a
-- second). It returns the token as a number and as the decimal string the
-- lease keeps (Lua's own number format would print 16 digits as 1.8e+15).
local function nextToken()
  local key = NS .. 'token'
  local tok = redis.call('INCR', key)
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if tok < floor then
    tok = floor
    redis.call('SET', key, string.format('%d', floor))
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

-- The record is one string rather than a hash: a claim reads it with one
-- GET (several times cheaper than HGETALL) and returns it untouched; the
-- rarer settles decode, change and re-encode it.
-- s state (q or d)  a attempts  e last error  nb not-before  ea enqueued
-- da dead at  ds dead seq  m ready member  fn last settle nonce
-- t tenant  i id  md metadata JSON  p payload  (m last: Enqueue encodes the
-- rest client-side and the script appends the member)
local RECORD = {'s', 'a', 'e', 'nb', 'ea', 'da', 'ds', 'fn', 't', 'i', 'md', 'p', 'm'}

local function decode(v)
  if not v then
    return nil
  end
  local r, pos = {}, 1
  for _, f in ipairs(RECORD) do
    local c = string.find(v, ':', pos, true)
    local n = tonumber(string.sub(v, pos, c - 1))
    r[f] = string.sub(v, c + 1, c + n)
    pos = c + n + 1
  end
  return r
end

local function encode(r)
  local parts = {}
  for k, f in ipairs(RECORD) do
    local v = r[f] or ''
    parts[k] = #v .. ':' .. v
  end
  return table.concat(parts)
end

-- place puts tenant t where its earliest queued item says: the rotation
-- when it is due by now, the waiting set when it is delayed, nowhere when
-- it has none. The caller has taken t out of both first.
local function place(t, now)
  local first = redis.call('ZRANGE', kready(t), 0, 0, 'WITHSCORES')
  if #first == 0 then
    return
  end
  if tonumber(first[2]) <= now then
    redis.call('ZADD', ROT, redis.call('HGET', TURNS, t) or 0, t)
  else
    redis.call('ZADD', WAIT, first[2], t)
  end
end

-- push queues the item whose decoded record is r (written back by the
-- caller) for tenant t, due at score due (a string). A tenant that had no
-- queued work takes a new stamp (the back of the rotation); one that had
-- keeps its place.
local function push(r, due, now)
  local t = r.t
  local seq = redis.call('INCR', Q .. 'seq')
  r.s = 'q'
  r.m = string.format('%016x', seq) .. lp(t) .. lp(r.i)
  local placed = redis.call('ZREM', ROT, t) + redis.call('ZREM', WAIT, t)
  if placed == 0 then
    local turn = redis.call('INCR', Q .. 'turn')
    redis.call('HSET', TURNS, t, turn)
  end
  redis.call('ZADD', kready(t), due, r.m)
  place(t, now)
end
