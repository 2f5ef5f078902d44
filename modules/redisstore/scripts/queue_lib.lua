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
--   Q..'ready:'..lp(t)  zset  a tenant's queued items: score due (us), member seq..id
--   Q..'item:'..ref     hash  the item record (ref = lp(tenant)..lp(id)); its
--                             state field says queued or dead, never leased
--   Q..'lease'          hash  ref -> 'token|expiry us|expiry ns|previous token|
--                             heartbeat nonce|worker' while the item is leased
--   Q..'leases'         zset  leased refs by expiry (us)
--   Q..'dead'           zset  dead refs by dead seq; Q..'dead:'..lp(t) per tenant
--   Q..'served'         hash  tenant -> turns served
--   Q..'tenants'        set   tenants that ever had an item
--   Q..'log'            list  recent turns, newest first
--   NS..'token'         string  the last fencing token (namespace-wide)
--   NS..'queues'        set   queue names
--
-- Times: scores are unix microseconds (exact in a double until year 2255);
-- record fields ending in 'n' or named ea/da/nb are unix nanoseconds kept
-- as strings, never used in arithmetic here. Numbers computed in Lua are
-- only ever small counters, because Redis formats Lua numbers with limited
-- precision when they are passed back to redis.call.
local function lp(s) return #s .. ':' .. s end
local Q, NS = ARGV[1], ARGV[2]
local ROT, WAIT, TURNS, LEASES, DEAD = Q .. 'rot', Q .. 'wait', Q .. 'turns', Q .. 'leases', Q .. 'dead'
local function kready(t) return Q .. 'ready:' .. lp(t) end
local function kdead(t) return Q .. 'dead:' .. lp(t) end
local function kitem(ref) return Q .. 'item:' .. ref end
local LEASE = Q .. 'lease'

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

-- push queues the item ik of tenant t, due at score due (a string). A
-- tenant that had no queued work takes a new stamp (the back of the
-- rotation); one that had keeps its place.
local function push(t, id, ik, due, now)
  local seq = redis.call('INCR', Q .. 'seq')
  local m = string.format('%016x', seq) .. id
  redis.call('HSET', ik, 's', 'q', 'm', m)
  local placed = redis.call('ZREM', ROT, t) + redis.call('ZREM', WAIT, t)
  if placed == 0 then
    local turn = redis.call('INCR', Q .. 'turn')
    redis.call('HSET', TURNS, t, turn)
  end
  redis.call('ZADD', kready(t), due, m)
  place(t, now)
end
