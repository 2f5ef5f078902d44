-- Adds items to one queue. An item whose id is queued, leased or dead is
-- left as it is, so a repeated enqueue is harmless.
--
-- ARGV[3] wake channel   ARGV[4] now (us)   ARGV[5] now (ns)   ARGV[6] queue name
-- then per item: tenant, id, payload, metadata (JSON), due (us), not-before (ns or '')
-- Returns how many items were added.
local now = tonumber(ARGV[4])
local added, wake = 0, false
for i = 7, #ARGV, 6 do
  local t, id = ARGV[i], ARGV[i + 1]
  local ik = kitem(lp(t) .. lp(id))
  if redis.call('EXISTS', ik) == 0 then
    redis.call('HSET', ik, 't', t, 'i', id, 'p', ARGV[i + 2], 'md', ARGV[i + 3], 'nb', ARGV[i + 5],
      'a', 0, 'e', '', 'ea', ARGV[5])
    push(t, id, ik, ARGV[i + 4], now)
    redis.call('SADD', Q .. 'tenants', t)
    added = added + 1
    if tonumber(ARGV[i + 4]) <= now then
      wake = true
    end
  end
end
if added > 0 then
  redis.call('SADD', NS .. 'queues', ARGV[6])
end
if wake then
  redis.call('PUBLISH', ARGV[3], '1')
end
return added
