-- Adds items to one queue. An item whose id is queued, leased or dead is
-- left as it is, so a repeated enqueue is harmless; a queued record found
-- without its ready member or a lease (what a script of an earlier release
-- could leave when it stopped half-way) is queued again, so the retry of
-- a half-written enqueue repairs it.
--
-- ARGV[1] now (us)   ARGV[2] now (ns)   ARGV[3] wake channel   ARGV[4] queue name
-- then per item: tenant, ref, the record encoded up to its last field
-- (the ready member, appended here), due (us), due as 16 hex digits, the
-- record's lifecycle extension ('' for none; it carries the priority).
-- Returns how many items were added (repairs included).
local now = tonumber(ARGV[1])
local seq0 = redis.call('GET', SEQ)
local seq = tonumber(seq0 or '0')
local P = newPushes()
P.now = now
local added, wake = 0, false
-- Which items exist already: one HMGET for the batch (and a table for ids
-- repeated within it), then one HSET of the new records.
local refs = {}
for i = 5, #ARGV, 6 do
  refs[#refs + 1] = ARGV[i + 1]
end
local have = redis.call('HMGET', ITEMS, unpack(refs))
local seen, recs = {}, {}
for k, ref in ipairs(refs) do
  local i = 5 + 6 * (k - 1)
  if not seen[ref] then
    seen[ref] = true
    local r, fresh
    if not have[k] then
      r, fresh = {t = ARGV[i], x = ARGV[i + 5]}, true
    else
      -- A queued record must have its member in READY, or a lease.
      local old = decode(have[k])
      if old and old.s == 'q' and (old.m == '' or not redis.call('ZSCORE', READY, old.m))
          and redis.call('HEXISTS', LEASE, ref) == 0 then
        r = old
      end
    end
    if r then
      seq = seq + 1
      local due = ARGV[i + 3]
      add(P, r, ref, due, ARGV[i + 4], seq)
      recs[#recs + 1] = ref
      if fresh then
        local x = ARGV[i + 5]
        recs[#recs + 1] = ARGV[i + 2] .. #r.m .. ':' .. r.m .. (x ~= '' and #x .. ':' .. x or '')
      else
        recs[#recs + 1] = encode(r)
      end
      added = added + 1
      if tonumber(due) <= now then
        wake = true
      end
    end
  end
end
if added == 0 then
  return 0
end
plan(P)

-- Writes from here on; everything above only read.
if not seq0 then
  -- The queue's first enqueue: the placeholders that keep its keys from
  -- ever running empty (see the prelude).
  redis.call('ZADD', READY, 0, '')
  redis.call('ZADD', ROT, '+inf', '')
  redis.call('ZADD', WAIT, '+inf', '')
  redis.call('HSET', ITEMS, '', '')
  redis.call('HSET', LEASE, '', '')
  redis.call('ZADD', LEASES, '+inf', '')
  redis.call('ZADD', DEAD, -1, '')
  redis.call('ZADD', TDEAD, 0, '')
  redis.call('SET', FLAG, '0', 'NX') -- SetLimits may have come first
  redis.call('HSET', LIMITS, '', '')
  redis.call('HSET', FSTATE, '', '')
  redis.call('ZADD', TLEASES, 0, '')
  redis.call('HSET', LIFE, '', '')
  redis.call('ZADD', WAITS, '+inf', '')
  redis.call('ZADD', PARKED, '+inf', '')
  redis.call('ZADD', CANCELS, '+inf', '')
  redis.call('ZADD', PDELAY, '+inf', '')
end
redis.call('HSET', ITEMS, unpack(recs))
redis.call('SET', SEQ, string.format('%d', seq))
apply(P, now)
redis.call('SADD', TENANTS, unpack(P.order))
redis.call('SADD', QUEUES, ARGV[4])
if wake then
  redis.call('PUBLISH', ARGV[3], '1')
end
return added
