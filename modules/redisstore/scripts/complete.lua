-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call.
--
-- ARGV[1] namespace prefix, then per lease: queue prefix, ref, token
-- Returns the 1-based positions of the leases that were lost.
local lost = {}
local k = 0
for i = 2, #ARGV, 3 do
  k = k + 1
  local q, ref, tok = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local ik = q .. 'item:' .. ref
  local st = redis.call('HMGET', ik, 's', 'tok')
  if st[1] == 'l' and st[2] == tok then
    redis.call('DEL', ik)
    redis.call('ZREM', q .. 'leases', ref)
  else
    lost[#lost + 1] = k
  end
end
return lost
