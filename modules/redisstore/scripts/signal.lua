-- Resumes a waiting item with a signal, exactly once: the check (it waits
-- for this signal and its wait has not timed out) and the write are this
-- one script.
--
-- ARGV[1] now (us)   ARGV[2] now (ns)   ARGV[3] now as 16 hex digits
-- ARGV[4] wake channel   ARGV[5] ref   ARGV[6] signal   ARGV[7] payload
-- Returns {1} resumed, {0} no such item, or {2, state letter, the signal
-- it waits for} when it does not wait for this one (state 'q' for a wait
-- that timed out, 'l' for a leased item).
local now = tonumber(ARGV[1])
local ref = ARGV[5]
local r = decode(redis.call('HGET', ITEMS, ref))
if not r then
  return {0}
end
local X = xget(r)
local st = r.s
if st == 'q' and redis.call('HEXISTS', LEASE, ref) == 1 then
  st = 'l'
end
if st == 'w' then
  local untl = tonumber(redis.call('ZSCORE', WAITS, ref) or '0')
  if untl <= now then
    return {2, 'q', ''}
  end
  if X.ws ~= ARGV[6] then
    return {2, 'w', X.ws}
  end
else
  return {2, st, ''}
end
X.rs, X.rp, X.rt, X.ra = ARGV[6], ARGV[7], '', ARGV[2]
X.ws, X.wsi, X.wu = '', '', ''
xput(r, X)
r.nb = ''
local seq = tonumber(redis.call('GET', SEQ) or '0') + 1
local P = newPushes()
P.now = now
add(P, r, ref, ARGV[1], ARGV[3], seq)
plan(P)

local E = newEvents(histCfg(LIFE), QK, ARGV[2])
if E then
  evAdd(E, ref, ev('signalled', ARGV[2], {sig = ARGV[6]}))
end

-- Writes from here on.
redis.call('ZREM', WAITS, ref)
redis.call('ZREM', PARKED, ref)
redis.call('HSET', ITEMS, ref, encode(r))
redis.call('SET', SEQ, string.format('%d', seq))
apply(P, now)
evFlush(E)
redis.call('PUBLISH', ARGV[4], '1')
return {1}
