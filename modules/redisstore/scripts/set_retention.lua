-- Sets what the queue keeps of its finished items (see history_lib.lua):
-- LIFE's 'ra', 'rc' and 're', and its history flag 'h', which stays once
-- set, since the queue may hold kept items and events from then on.
--
-- ARGV[1] age (us)   ARGV[2] count   ARGV[3] events per item
lifePlaceholders()
histPlaceholders(QK)
if ARGV[1] ~= '0' or ARGV[2] ~= '0' or ARGV[3] ~= '0' then
  redis.call('HSET', LIFE, 'h', '1')
end
redis.call('HSET', LIFE, 'ra', ARGV[1], 'rc', ARGV[2], 're', ARGV[3])
return 1
