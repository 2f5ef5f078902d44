-- Adds items to one queue. An item whose id is queued, leased, waiting,
-- dead or cancelled, or completed within its uniqueness window, is left
-- as it is, so a repeated enqueue is harmless; a completed item kept past
-- its window (or without one) is replaced by the new item, its events
-- dropped. A queued record found without its ready member or a lease
-- (what a script of an earlier release could leave when it stopped
-- half-way) is queued again, so the retry of a half-written enqueue
-- repairs it.
--
-- ARGV[1] now (us)   ARGV[2] now (ns)   ARGV[3] wake channel   ARGV[4] queue name
-- ARGV[5] '1' when some item asks for a uniqueness window
-- then per item: tenant, ref, the record encoded up to its last field
-- (the ready member, appended here), due (us), due as 16 hex digits, the
-- record's lifecycle extension ('' for none; it carries the priority and
-- the uniqueness window), not-before (ns, '' for none).
-- Returns per item 'n' added (repairs included), the state letter of the
-- item found ('l' for a leased one; 'q' for an id repeated in the call),
-- or 'k' then the end of its uniqueness window (us) for a completed one.
local now = tonumber(ARGV[1])
local seq0 = redis.call('GET', SEQ)
local seq = tonumber(seq0 or '0')
local P = newPushes()
P.now = now
local added, wake = 0, false
local cfg, hp, wide = histCfg(LIFE)
local E = newEvents(cfg, QK, ARGV[2])
-- Which items exist already: one HMGET for the batch (and a table for ids
-- repeated within it), then one HSET of the new records.
local refs = {}
for i = 6, #ARGV, 7 do
  refs[#refs + 1] = ARGV[i + 1]
end
local have = redis.call('HMGET', ITEMS, unpack(refs))
local seen, recs, out, ids, replaced = {}, {}, {}, {}, {}
for k, ref in ipairs(refs) do
  local i = 6 + 7 * (k - 1)
  if seen[ref] then
    out[k] = 'q'
  else
    seen[ref] = true
    local r, fresh
    local old = have[k] and decode(have[k])
    if not old then
      r, fresh = {t = ARGV[i], x = ARGV[i + 5]}, true
    elseif old.s == 'k' then
      -- Completed and kept: a duplicate while its window is open, else
      -- replaced.
      local X = xget(old)
      local untl = X.uf ~= '' and tonumber(X.fa) + tonumber(X.uf)
      if untl and now < untl then
        out[k] = 'k' .. string.format('%d', untl)
      else
        r, fresh = {t = ARGV[i], x = ARGV[i + 5]}, true
        replaced[#replaced + 1] = {ref, finMember(X.fa, old.t, old.i)}
      end
    elseif old.s == 'q' and (old.m == '' or not redis.call('ZSCORE', READY, old.m))
        and redis.call('HEXISTS', LEASE, ref) == 0 then
      -- A queued record must have its member in READY, or a lease.
      r = old
    elseif old.s == 'q' and redis.call('HEXISTS', LEASE, ref) == 1 then
      out[k] = 'l'
    else
      out[k] = old.s
    end
    if r then
      out[k] = 'n'
      if fresh then
        ids[#ids + 1] = '0'
        ids[#ids + 1] = idMember(ref)
        if E then
          evAdd(E, ref, ev('enqueued', ARGV[2], {nd = ARGV[i + 6]}))
        end
      end
      seq = seq + 1
      local due = ARGV[i + 3]
      add(P, r, ref, due, ARGV[i + 4], seq)
      recs[#recs + 1] = ref
      if fresh then
        local x = ARGV[i + 5]
        recs[#recs + 1] = ARGV[i + 2] .. lenp(#r.m) .. r.m .. (x ~= '' and lenp(#x) .. x or '')
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
  return out
end
plan(P)

-- Writes from here on; everything above only read.
if not seq0 then
  -- The queue's first enqueue: the placeholders that keep its keys from
  -- ever running empty (see the prelude).
  redis.call('ZADD', READY, '0', '')
  redis.call('ZADD', ROT, '+inf', '')
  redis.call('ZADD', WAIT, '+inf', '')
  redis.call('HSET', ITEMS, '', '')
  redis.call('HSET', LEASE, '', '')
  redis.call('ZADD', LEASES, '+inf', '')
  redis.call('ZADD', DEAD, -1, '')
  redis.call('ZADD', TDEAD, '0', '')
  redis.call('SET', FLAG, '0', 'NX') -- SetLimits may have come first
  redis.call('HSET', LIMITS, '', WIDE)
  redis.call('HSET', FSTATE, '', WIDE)
  redis.call('ZADD', TLEASES, '0', '')
  redis.call('HSET', LIFE, '', '')
  redis.call('ZADD', WAITS, '+inf', '')
  redis.call('ZADD', PARKED, '+inf', '')
  redis.call('ZADD', CANCELS, '+inf', '')
  redis.call('ZADD', PDELAY, '+inf', '')
end
if not hp then
  histPlaceholders(QK)
end
if not wide then
  widen()
end
redis.call('HSET', ITEMS, unpack(recs))
if #ids > 0 then
  redis.call('ZADD', IDS, unpack(ids))
end
if ARGV[5] == '1' then
  redis.call('HSET', LIFE, 'u', '1', 'h', '1')
end
for _, rp in ipairs(replaced) do
  redis.call('ZREM', FIN, rp[2])
  redis.call('HDEL', EVS, rp[1], 'h' .. rp[1])
end
evFlush(E)
redis.call('SET', SEQ, string.format('%d', seq))
apply(P, now)
redis.call('SADD', TENANTS, unpack(P.order))
redis.call('SADD', QUEUES, ARGV[4])
if wake then
  redis.call('PUBLISH', ARGV[3], '1')
end
return out
