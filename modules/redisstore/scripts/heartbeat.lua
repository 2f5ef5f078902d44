-- Extends a live lease under a new token. Fenced on the token: a lease
-- that was reaped, settled, expired or re-claimed is not extended.
--
-- ARGV[1] ref   ARGV[2] token   ARGV[3] now (us)   ARGV[4] new expiry (us)
-- ARGV[5] new expiry (ns)   ARGV[6] nonce of this call: a retry of a
-- heartbeat that landed (its reply was lost) gets the token it was given.
-- Returns the new token, -1 when the lease is lost, or -2 when it carries
-- a cancel mark (the item is then cancelled, the lease not extended).
local ref = ARGV[1]
local l = lease(redis.call('HGET', LEASE, ref))
if not l then
  return -1
end
if l.hn == ARGV[6] and l.hp == ARGV[2] then
  return tonumber(l.tok)
end
if l.tok ~= ARGV[2] or tonumber(l.x) <= tonumber(ARGV[3]) then
  return -1
end
-- The record is read only while some lease of the queue carries a mark;
-- the heartbeat is counted while the queue records events.
local lf = redis.call('HMGET', LIFE, 'm', 're')
local r = (tonumber(lf[1]) or 0) > 0 and decode(redis.call('HGET', ITEMS, ref))
if r and marked(r) then
  local E = newEvents(histCfg(LIFE), QK, ARGV[3] .. '000')
  endMarked(ref, r, ARGV[3], E)
  evFlush(E)
  return -2
end
if (tonumber(lf[2]) or 0) > 0 then
  redis.call('HINCRBY', EVS, 'h' .. ref, 1)
end
local tok, stok = nextToken()
redis.call('HSET', LEASE, ref, stok .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|' .. ARGV[2] .. '|' .. ARGV[6] .. '|' .. l.w)
redis.call('ZADD', LEASES, ARGV[4], ref)
return tok
