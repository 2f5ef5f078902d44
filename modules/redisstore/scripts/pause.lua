-- Pauses or resumes a queue or one tenant of it (LIFE 'q', 't'..lp(t),
-- and 'n' the count of paused tenants). Pausing what is paused, or
-- resuming what is not, writes nothing.
--
-- ARGV[1] '1' pause, '0' resume   ARGV[2] tenant ('' the queue)
-- ARGV[3] wake channel. A resume wakes the queue's claimers.
local on = ARGV[1] == '1'
local f = ARGV[2] == '' and 'q' or 't' .. lp(ARGV[2])
local was = redis.call('HGET', LIFE, f) == '1'
if was ~= on then
  -- Writes from here on.
  lifePlaceholders()
  if on then
    redis.call('HSET', LIFE, f, '1')
  else
    redis.call('HDEL', LIFE, f)
  end
  if f ~= 'q' then
    redis.call('HINCRBY', LIFE, 'n', on and 1 or -1)
  end
end
if not on then
  redis.call('PUBLISH', ARGV[3], '1')
end
return 1
