-- Applies the policy's decisions to failed or expired leases. Each is
-- fenced on the token and on the lease score the caller saw: a lease that
-- was heartbeated since (new token, later expiry) is left alone, so a
-- reaper that lost the race to a heartbeat writes nothing.
--
-- ARGV[1] now (us)   ARGV[2] now (ns)   ARGV[3] wake channel
-- then per lease: ref, token, highest lease score accepted ('+inf' for
-- Fail), attempts the decision assumed, retry ('1' or '0'), due (us), due
-- as 16 hex digits, not-before (ns), error text, nonce of the call (''
-- for none: a retry of a settle that landed finds its nonce and reports
-- it applied)
-- Returns per lease: 1 applied, 0 lost, 2 cancelled (the lease carried a
-- cancel mark: nothing the decision said is written, the item is
-- cancelled), or -(stored attempts) when the decision assumed a
-- different attempt count (nothing written; decide again).
local now = tonumber(ARGV[1])
local res = {}
local wake = false
local seq = tonumber(redis.call('GET', SEQ) or '0')
local P = newPushes()
P.now = now
local cancels = {}
local drops, recs, dead, tdead, seen = {}, {}, {}, {}, {}
-- With limits on the queue, the settled leases leave TLEASES too, and a
-- lease ending of a tenant a claim passed over for its cap wakes the
-- claimers (capMarked in flow_lib.lua).
local flow = redis.call('GET', FLAG) == '1'
local E = newEvents(histCfg(LIFE), QK, ARGV[2])
for i = 4, #ARGV, 10 do
  local ref, tok, maxs = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local r = decode(redis.call('HGET', ITEMS, ref))
  local l = lease(redis.call('HGET', LEASE, ref))
  local score = redis.call('ZSCORE', LEASES, ref)
  if r and ARGV[i + 9] ~= '' and r.fn == ARGV[i + 9] then
    res[#res + 1] = 1
  elseif seen[ref] or not r or not l or l.tok ~= tok or not score or (maxs ~= '+inf' and tonumber(score) > tonumber(maxs)) then
    res[#res + 1] = 0
  elseif marked(r) then
    seen[ref] = true
    cancels[#cancels + 1] = {ref, r}
    res[#res + 1] = 2
  elseif r.a ~= ARGV[i + 3] then
    res[#res + 1] = -tonumber(r.a) - 1
  else
    seen[ref] = true
    drops[#drops + 1] = ref
    r.a = tostring(tonumber(r.a) + 1)
    r.e = ARGV[i + 8]
    r.fn = ARGV[i + 9]
    seq = seq + 1
    -- A worker's Fail names it; a reap (a lease score bound) names none.
    -- The event's fields are made only when the queue records events.
    if ARGV[i + 4] == '1' then
      r.nb = ARGV[i + 7]
      add(P, r, ref, ARGV[i + 5], ARGV[i + 6], seq)
      wake = true
      if E then
        evAdd(E, ref, ev('failed', ARGV[2], {a = r.a, e = r.e, w = maxs == '+inf' and l.w or '', nd = ARGV[i + 7]}))
      end
    else
      if E then
        evAdd(E, ref, ev('dead', ARGV[2], {a = r.a, e = r.e, w = maxs == '+inf' and l.w or ''}))
      end
      local s = string.format('%d', seq)
      r.s, r.da, r.ds = 'd', ARGV[2], s
      dead[#dead + 1] = s
      dead[#dead + 1] = ref
      tdead[#tdead + 1] = '0'
      tdead[#tdead + 1] = lp(r.t) .. hex16(seq) .. ref
    end
    recs[#recs + 1] = ref
    recs[#recs + 1] = r
    res[#res + 1] = 1
  end
end
plan(P)
local marks = flow and #drops > 0 and capMarked(FSTATE, drops) or {}
if #marks > 0 then
  wake = true
end

-- Writes from here on.
if #drops > 0 then
  redis.call('HDEL', LEASE, unpack(drops))
  redis.call('ZREM', LEASES, unpack(drops))
  if flow then
    redis.call('ZREM', TLEASES, unpack(drops))
  end
  capUnmark(FSTATE, marks)
  for j = 2, #recs, 2 do
    recs[j] = encode(recs[j])
  end
  redis.call('HSET', ITEMS, unpack(recs))
  redis.call('SET', SEQ, string.format('%d', seq))
end
apply(P, now)
for _, c in ipairs(cancels) do
  endMarked(c[1], c[2], ARGV[1], E)
end
if #cancels > 0 then
  wake = true
end
if #dead > 0 then
  redis.call('ZADD', DEAD, unpack(dead))
  redis.call('ZADD', TDEAD, unpack(tdead))
end
evFlush(E)
if wake then
  redis.call('PUBLISH', ARGV[3], '1')
end
return res
