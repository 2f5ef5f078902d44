-- Moves one tenant's share of a queue written by a release before declared
-- keys into this layout, one chunk per call: its ready set
-- Q..'ready:'..lp(t) (score due, member 16 hex digits of seq then the ref)
-- into READY, and its dead set Q..'dead:'..lp(t) (score dead seq, member
-- the ref) into TDEAD; and writes the placeholders the queue's first
-- enqueue would have (a queue the earlier release created has none).
-- KEYS[32] and KEYS[33] are the tenant's two old keys; called with the 31
-- queue keys only, it sees to the placeholders and nothing else.
--
-- ARGV[1] tenant   ARGV[2] now (us)   ARGV[3] most entries taken from each
-- old set   ARGV[4] most record bytes read (at least one entry of each set
-- is taken)   ARGV[5] '1' to move, '0' to count only (a dry run: nothing
-- is written)   ARGV[6], ARGV[7] how many entries of the old ready and
-- dead sets to pass over first (a dry run pages with them; a move takes
-- from the front, since what it moved is gone)
-- Returns {ready entries moved, ready entries dropped, dead entries moved,
-- dead entries dropped, placeholders missing, ready entries left, dead
-- entries left, 1 if the tenant joins the rotation}.
--
-- A ready entry moves when its record is the tenant's, queued, and names
-- the entry as its ready member; the record then names the new member. A
-- dead entry moves when its record is the tenant's and dead. Any other
-- entry is dropped: the earlier release skipped such entries too (a claim
-- found no record), and one whose item this release has queued again
-- since would otherwise run twice. The rotation, turns, leases, records
-- and the queue-wide dead set kept their shape and stay as they are,
-- except that a tenant with queued items but in neither the rotation nor
-- the waiting set (what an earlier script stopped half-way could leave)
-- joins the back of the rotation, as a tenant that had no work does.
--
-- Everything is read before the first write, and what moved leaves the
-- old sets in the same step, so a call refused, interrupted or repeated
-- leaves nothing half-moved and the next call takes what is left.
local OLDREADY, OLDDEAD = KEYS[32], KEYS[33]
local t, now = ARGV[1], tonumber(ARGV[2])
local most, budget = tonumber(ARGV[3]), tonumber(ARGV[4])
local apply = ARGV[5] == '1'
local skipR, skipD = tonumber(ARGV[6]), tonumber(ARGV[7])
local HEX16 = '^' .. string.rep('%x', 16)

-- The placeholders (see the prelude and enqueue.lua): kind, key, score.
local holders = {
  {'z', READY, '0'}, {'z', ROT, '+inf'}, {'z', WAIT, '+inf'}, {'h', ITEMS}, {'h', LEASE},
  {'z', LEASES, '+inf'}, {'z', DEAD, '-1'}, {'z', TDEAD, '0'},
}
local missing = {}
for _, h in ipairs(holders) do
  local have
  if h[1] == 'z' then
    have = redis.call('ZSCORE', h[2], '')
  else
    have = redis.call('HEXISTS', h[2], '') == 1
  end
  if not have then
    missing[#missing + 1] = h
  end
end

local adds, recs, tadds, gone, dgone = {}, {}, {}, {}, {}
local moved, rdropped, dmoved, ddropped = 0, 0, 0, 0
local rleft, dleft = 0, 0
local lt = lp(t)
local first -- the earliest due time (us) among the items moved
local place = false
-- record reads the record of ref, the entry after the taken ones already
-- taken from its set, and says whether that spends the byte budget: the
-- entry then waits for the next call (the first of a set never does).
local used = 0
local function record(ref, taken)
  local v = redis.call('HGET', ITEMS, ref)
  used = used + (v and #v or 0)
  return decode(v), taken > 0 and used > budget
end

if OLDREADY then
  local rs = redis.call('ZRANGE', OLDREADY, skipR, skipR + most - 1, 'WITHSCORES')
  for j = 1, #rs, 2 do
    local m = rs[j]
    local ref = string.sub(m, 17)
    local r, spent = record(ref, #gone)
    if spent then
      break
    end
    gone[#gone + 1] = m
    if r and r.s == 'q' and r.t == t and r.m == m and string.find(m, HEX16) then
      local due = math.max(math.floor(tonumber(rs[j + 1]) or 0), 0)
      r.m = lt .. hex16(due) .. string.sub(m, 1, 16) .. ref
      adds[#adds + 1] = '0'
      adds[#adds + 1] = r.m
      recs[#recs + 1] = ref
      recs[#recs + 1] = encode(r)
      if not first or due < first then
        first = due
      end
      moved = moved + 1
    else
      rdropped = rdropped + 1
    end
  end
  rleft = redis.call('ZCARD', OLDREADY) - skipR - #gone

  local ds = redis.call('ZRANGE', OLDDEAD, skipD, skipD + most - 1, 'WITHSCORES')
  for j = 1, #ds, 2 do
    local ref = ds[j]
    local r, spent = record(ref, #dgone)
    if spent then
      break
    end
    dgone[#dgone + 1] = ref
    if r and r.s == 'd' and r.t == t then
      local seq = tonumber(r.ds) or tonumber(ds[j + 1]) or 0
      tadds[#tadds + 1] = '0'
      tadds[#tadds + 1] = lt .. hex16(seq) .. ref
      dmoved = dmoved + 1
    else
      ddropped = ddropped + 1
    end
  end
  dleft = redis.call('ZCARD', OLDDEAD) - skipD - #dgone
end

if moved > 0 and not redis.call('ZSCORE', ROT, t) and not redis.call('ZSCORE', WAIT, t) then
  place = true
  local f = firstOf(lt)
  if f then
    first = math.min(first, tonumber(dueOf(lt, f)))
  end
end
local reply = {moved, rdropped, dmoved, ddropped, #missing, rleft, dleft, place and 1 or 0}
if not apply then
  return reply
end

-- Writes from here on.
for _, h in ipairs(missing) do
  if h[1] == 'z' then
    redis.call('ZADD', h[2], h[3], '')
  else
    redis.call('HSET', h[2], '', '')
  end
end
if #missing > 0 then
  widen() -- as the queue's first enqueue would have
end
if #adds > 0 then
  redis.call('ZADD', READY, unpack(adds))
  redis.call('HSET', ITEMS, unpack(recs))
end
if #tadds > 0 then
  redis.call('ZADD', TDEAD, unpack(tadds))
end
if #gone > 0 then
  redis.call('ZREM', OLDREADY, unpack(gone))
end
if #dgone > 0 then
  redis.call('ZREM', OLDDEAD, unpack(dgone))
end
if place then
  -- As a tenant with no queued work that gets some: the back of the
  -- rotation, or the waiting set until its first item is due.
  local stamp = redis.call('INCR', TURN)
  redis.call('HSET', TURNS, t, stamp)
  if first <= now then
    redis.call('ZADD', ROT, stamp, t)
  else
    redis.call('ZADD', WAIT, string.format('%d', first), t)
  end
end
return reply
