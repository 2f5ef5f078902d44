-- Requeues or purges dead letters, re-checking each against the filter
-- here, so a bulk action never touches an item outside it even if the
-- item changed since the caller listed it.
--
-- ARGV[3] 'requeue' or 'purge'   ARGV[4] now (us)   ARGV[5] now (ns)   ARGV[6] wake channel
-- ARGV[7] tenant ('' any)   ARGV[8] id ('' any)   ARGV[9] error substring ('' any)
-- then refs. Returns how many moved.
local now = tonumber(ARGV[4])
local n = 0
for i = 10, #ARGV do
  local ref = ARGV[i]
  local r = decode(redis.call('HGET', ITEMS, ref))
  if r and r.s == 'd' and (ARGV[7] == '' or r.t == ARGV[7]) and (ARGV[8] == '' or r.i == ARGV[8])
      and (ARGV[9] == '' or string.find(r.e, ARGV[9], 1, true)) then
    redis.call('ZREM', DEAD, ref)
    redis.call('ZREM', kdead(r.t), ref)
    if ARGV[3] == 'requeue' then
      r.a, r.da, r.ds, r.nb, r.ea = '0', '', '', '', ARGV[5]
      push(r, ARGV[4], now)
      redis.call('HSET', ITEMS, ref, encode(r))
    else
      redis.call('HDEL', ITEMS, ref)
    end
    n = n + 1
  end
end
if n > 0 and ARGV[3] == 'requeue' then
  redis.call('PUBLISH', ARGV[6], '1')
end
return n
