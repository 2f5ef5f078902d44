-- Removes a run and its index entries.
--
-- KEYS[1..4] and ARGV[1..4] as in state_lib.lua
-- KEYS[5] tenant index   KEYS[6] the run's applied patches of earlier
-- releases   KEYS[7] the run's session index, as the client guessed it
-- ARGV[5] the session KEYS[7] belongs to   ARGV[6] fence ('0' unfenced)
-- KEYS[8], KEYS[9] the run's versions and their records, removed with it
-- (UNLINK: a run may keep many large versions, freed off the main thread)
--
-- The delete's record outlives the run (it is the tenant's), so a delete
-- sent again after its reply was lost answers 1 and leaves alone a run
-- created in the meantime. Returns {1} when deleted (by this try or an
-- earlier one), {0} when missing, {4, stored fence} when the run's fence
-- is above the delete's, {2, session} when the run is in a
-- session other than the one declared: nothing was written, and the
-- client calls again declaring that session's index.
if replayed('d') then
  return {1}
end
local h = redis.call('HMGET', KEYS[2], 'se', 'f')
local session = h[1]
if not session then
  return {0}
end
if stale(h[2], ARGV[6]) then
  return {4, h[2]}
end
if session ~= '' and session ~= ARGV[5] then
  return {2, session}
end
if session ~= '' then
  redis.call('ZREM', KEYS[7], ID)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[6])
redis.call('UNLINK', KEYS[8], KEYS[9])
redis.call('ZREM', KEYS[5], ID)
remember('d')
return {1}
