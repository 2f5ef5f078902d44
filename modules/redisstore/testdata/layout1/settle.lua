-- Applies the policy's decisions to failed or expired leases. Each is
-- fenced on the token and on the lease score the caller saw: a lease that
-- was heartbeated since (new token, later expiry) is left alone, so a
-- reaper that lost the race to a heartbeat writes nothing.
--
-- ARGV[3] now (us)   ARGV[4] now (ns)   ARGV[5] wake channel
-- then per lease: ref, token, highest lease score accepted ('+inf' for
-- Fail), attempts the decision assumed, retry ('1' or '0'), due (us),
-- not-before (ns), error text, nonce of the call ('' for none: a retry of
-- a settle that landed finds its nonce and reports it applied)
-- Returns per lease: 1 applied, 0 lost, or -(stored attempts) when the
-- decision assumed a different attempt count (nothing written; decide
-- again).
local now = tonumber(ARGV[3])
local res = {}
local wake = false
for i = 6, #ARGV, 9 do
  local ref, tok, maxs = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local r = decode(redis.call('HGET', ITEMS, ref))
  local l = lease(redis.call('HGET', LEASE, ref))
  local score = redis.call('ZSCORE', LEASES, ref)
  if r and ARGV[i + 8] ~= '' and r.fn == ARGV[i + 8] then
    res[#res + 1] = 1
  elseif not r or not l or l.tok ~= tok or not score or (maxs ~= '+inf' and tonumber(score) > tonumber(maxs)) then
    res[#res + 1] = 0
  elseif r.a ~= ARGV[i + 3] then
    res[#res + 1] = -tonumber(r.a) - 1
  else
    local t = r.t
    redis.call('HDEL', LEASE, ref)
    redis.call('ZREM', LEASES, ref)
    r.a = tostring(tonumber(r.a) + 1)
    r.e = ARGV[i + 7]
    r.fn = ARGV[i + 8]
    if ARGV[i + 4] == '1' then
      r.nb = ARGV[i + 6]
      push(r, ARGV[i + 5], now)
      wake = true
    else
      local seq = redis.call('INCR', Q .. 'seq')
      r.s, r.da, r.ds = 'd', ARGV[4], tostring(seq)
      redis.call('ZADD', DEAD, seq, ref)
      redis.call('ZADD', kdead(t), seq, ref)
    end
    redis.call('HSET', ITEMS, ref, encode(r))
    res[#res + 1] = 1
  end
end
if wake then
  redis.call('PUBLISH', ARGV[5], '1')
end
return res
