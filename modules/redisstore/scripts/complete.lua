-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call.
--
-- ARGV[1] namespace prefix, then per lease: queue prefix, ref, token
-- Returns the 1-based positions of the leases that were lost.
local lost = {}
local done = {} -- queue prefix -> refs to drop from its lease set
local k = 0
for i = 2, #ARGV, 3 do
  k = k + 1
  local q, ref, tok = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local ik = q .. 'item:' .. ref
  local st = redis.call('HMGET', ik, 's', 'tok')
  if st[1] == 'l' and st[2] == tok then
    redis.call('DEL', ik)
    local refs = done[q]
    if not refs then
      refs = {}
      done[q] = refs
    end
    refs[#refs + 1] = ref
  else
    lost[#lost + 1] = k
  end
end
for q, refs in pairs(done) do
  redis.call('ZREM', q .. 'leases', unpack(refs))
end
return lost
