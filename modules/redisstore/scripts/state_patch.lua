-- Adds counter deltas to a run and optionally sets its status. HINCRBY
-- inside one script: concurrent patches all land and each bumps the
-- version, so a put holding an older version is refused.
--
-- KEYS[1..4] and ARGV[1..4] as in state_lib.lua
-- ARGV[5..9] deltas: input tokens, output tokens, cost, iterations, cursor
-- ARGV[10] status ('' keeps it)   ARGV[11] now (unix ns)
-- ARGV[12] fence ('0' unfenced)
-- KEYS[5], KEYS[6] the run's versions and their records, ARGV[13] how
-- many to keep, ARGV[14] the age cutoff (state_versions_lib.lua)
--
-- A patch that changes the status keeps the run as it was as a version
-- (when ARGV[13] is above 0); one that only adds to the counters keeps
-- none. Either prunes the versions past the bounds.
--
-- Every counter is checked before the first HINCRBY (which refuses to
-- overflow, but only for the counter it is adding to, after the ones
-- before it were added). Returns {1, hash fields..., data} when patched
-- (or patched by an earlier try of this call: then the fields are the
-- ones that patch left, and the blob is the one stored now), {0} when the
-- run does not exist, {4, stored fence} when the run's fence is above
-- the patch's, {3, counter position (1..5), stored value} when a
-- sum would leave the int64 range.
local done = replayed('a')
if done then
  return reply(done, redis.call('GET', KEYS[1]) or '')
end
local h = redis.call('HMGET', KEYS[2], 'v', 'it', 'ot', 'c', 'i', 'cur', 'f', 'st')
if not h[1] then
  return {0}
end
if stale(h[7], ARGV[12]) then
  return {4, h[7]}
end
for n = 1, 5 do
  if not fits(h[n + 1], ARGV[4 + n]) then
    return {3, n, h[n + 1]}
  end
end

local keep = tonumber(ARGV[13])
if keep > 0 and ARGV[10] ~= '' and ARGV[10] ~= h[8] then
  keep_version(redis.call('HGETALL', KEYS[2]), KEYS[1], KEYS[5], KEYS[6], true)
end
prune_versions(KEYS[5], KEYS[6], keep, ARGV[14])
local counters = {'it', 'ot', 'c', 'i', 'cur'}
for n, f in ipairs(counters) do
  if ARGV[4 + n] ~= '0' then
    redis.call('HINCRBY', KEYS[2], f, ARGV[4 + n])
  end
end
redis.call('HINCRBY', KEYS[2], 'v', 1)
redis.call('HSET', KEYS[2], 'ua', ARGV[11])
raise_fence(KEYS[2], h[7], ARGV[12])
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[2], 'st', ARGV[10])
end
remember('a')
return reply(redis.call('HGETALL', KEYS[2]), redis.call('GET', KEYS[1]) or '')
