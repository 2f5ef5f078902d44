-- Ends a lease with a snooze or a wait, fenced on the token. A lease that
-- carries a cancel mark writes nothing asked for: its item is cancelled.
--
-- ARGV[1] now (us)   ARGV[2] now (ns)   ARGV[3] wake channel   ARGV[4] ref
-- ARGV[5] token   ARGV[6] nonce   ARGV[7] 's' snooze or 'w' wait
-- snooze: ARGV[8] the snoozes the decision assumed   ARGV[9] '1' retry,
-- '0' dead letter   ARGV[10] due (us)   ARGV[11] due as 16 hex digits
-- ARGV[12] not-before (ns)   ARGV[13] the dead letter's error text
-- wait: ARGV[8] signal   ARGV[9] until (ns)   ARGV[10] until (us)
-- Returns 1 done, 0 lost, 2 cancelled, or -(stored snoozes)-1 when the
-- decision assumed another count (nothing written; decide again).
local now = tonumber(ARGV[1])
local ref, tok = ARGV[4], ARGV[5]
local r = decode(redis.call('HGET', ITEMS, ref))
local l = lease(redis.call('HGET', LEASE, ref))
if r and r.fn == ARGV[6] then
  return 1
end
if not r or not l or l.tok ~= tok or r.s ~= 'q' then
  return 0
end
local E = newEvents(histCfg(LIFE), QK, ARGV[2])
if marked(r) then
  endMarked(ref, r, ARGV[1], E)
  evFlush(E)
  redis.call('PUBLISH', ARGV[3], '1')
  return 2
end
local X = xget(r)
local seq = tonumber(redis.call('GET', SEQ) or '0') + 1
local P = newPushes()
P.now = now
local wake = false
if ARGV[7] == 's' then
  local sn = X.sn == '' and '0' or X.sn
  if sn ~= ARGV[8] then
    return -tonumber(sn) - 1
  end
  if ARGV[9] == '1' then
    X.sn = string.format('%d', tonumber(sn) + 1)
    xput(r, X)
    r.nb = ARGV[12]
    add(P, r, ref, ARGV[10], ARGV[11], seq)
    plan(P)
    wake = tonumber(ARGV[10]) <= now
    if E then
      evAdd(E, ref, ev('snoozed', ARGV[2], {w = l.w, nd = ARGV[12]}))
    end
  else
    r.e, r.s, r.da, r.ds = ARGV[13], 'd', ARGV[2], string.format('%d', seq)
    if E then
      evAdd(E, ref, ev('dead', ARGV[2], {w = l.w, a = string.format('%d', tonumber(r.a) + 1), e = r.e}))
    end
  end
else
  X.ws, X.wsi, X.wu = ARGV[8], ARGV[2], ARGV[9]
  xput(r, X)
  r.s = 'w'
  if E then
    evAdd(E, ref, ev('waiting', ARGV[2], {w = l.w, sig = ARGV[8], nd = ARGV[9]}))
  end
end
r.fn = ARGV[6]
-- A snooze due now is work, and with limits on the queue a lease ending
-- may free a capped tenant: claimers are woken then. Otherwise none has
-- anything new to find before the item is due (claims find it then, as
-- they find any delayed item), so none is woken for nothing.
local flow = redis.call('GET', FLAG) == '1'
wake = wake or flow
-- The lifecycle placeholders are written together, with LIFE's, and never
-- removed: a queue whose LIFE has its placeholder needs none written.
-- One whose priority flag is set needs it set no more (apply, P.pset).
local lf = redis.call('HMGET', LIFE, '', 'p')
P.pset = lf[2] == '1'

-- Writes from here on.
if not lf[1] then
  lifePlaceholders()
end
redis.call('HDEL', LEASE, ref)
redis.call('ZREM', LEASES, ref)
if flow then
  -- TLEASES holds leases only while the flag is on (as in settle.lua).
  redis.call('ZREM', TLEASES, ref)
end
redis.call('HSET', ITEMS, ref, encode(r))
redis.call('SET', SEQ, string.format('%d', seq))
if r.s == 'q' then
  apply(P, now)
elseif r.s == 'd' then
  redis.call('ZADD', DEAD, r.ds, ref)
  redis.call('ZADD', TDEAD, '0', lp(r.t) .. hex16(seq) .. ref)
else
  redis.call('ZADD', WAITS, ARGV[10], ref)
  redis.call('ZADD', PARKED, ARGV[1], ref)
  redis.call('HSET', LIFE, 'w', '1')
end
evFlush(E)
if wake then
  redis.call('PUBLISH', ARGV[3], '1')
end
return 1
