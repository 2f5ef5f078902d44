-- Extends a live lease under a new token. Fenced on the token: a lease
-- that was reaped, settled, expired or re-claimed is not extended.
--
-- ARGV[3] ref   ARGV[4] token   ARGV[5] now (us)   ARGV[6] new expiry (us)
-- ARGV[7] new expiry (ns)   ARGV[8] nonce of this call: a retry of a
-- heartbeat that landed (its reply was lost) gets the token it was given.
-- Returns the new token, or -1 when the lease is lost.
local ref = ARGV[3]
local l = lease(redis.call('HGET', LEASE, ref))
if not l then
  return -1
end
if l.hn == ARGV[8] and l.hp == ARGV[4] then
  return tonumber(l.tok)
end
if l.tok ~= ARGV[4] or tonumber(l.x) <= tonumber(ARGV[5]) then
  return -1
end
local tok, stok = nextToken()
redis.call('HSET', LEASE, ref, stok .. '|' .. ARGV[6] .. '|' .. ARGV[7] .. '|' .. ARGV[4] .. '|' .. ARGV[8] .. '|' .. l.w)
redis.call('ZADD', LEASES, ARGV[6], ref)
return tok
