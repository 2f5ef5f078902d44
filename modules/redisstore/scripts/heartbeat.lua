-- Extends a live lease under a new token. Fenced on the token: a lease
-- that was reaped, settled or re-claimed is not extended.
--
-- ARGV[3] ref   ARGV[4] token   ARGV[5] now (us)   ARGV[6] new expiry (us)
-- ARGV[7] new expiry (ns)   ARGV[8] nonce of this call: a retry of a
-- heartbeat that landed (its reply was lost) gets the token it was given.
-- Returns the new token, or -1 when the lease is lost.
local ik = kitem(ARGV[3])
local st = redis.call('HMGET', ik, 's', 'tok', 'x', 'hn', 'hp')
if st[1] == 'l' and st[4] == ARGV[8] and st[5] == ARGV[4] then
  return tonumber(st[2])
end
if st[1] ~= 'l' or st[2] ~= ARGV[4] or tonumber(st[3]) <= tonumber(ARGV[5]) then
  return -1
end
local tok = redis.call('INCR', NS .. 'token')
redis.call('HSET', ik, 'tok', tok, 'x', ARGV[6], 'xn', ARGV[7], 'hn', ARGV[8], 'hp', ARGV[4])
redis.call('ZADD', LEASES, ARGV[6], ARGV[3])
return tok
