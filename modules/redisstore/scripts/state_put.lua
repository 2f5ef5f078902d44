-- Writes a run's session, status and data if the caller holds the stored
-- version (0 creates). The version check and the write are one step, so
-- two workers holding the same version cannot both win.
--
-- KEYS[1..4] and ARGV[1..4] as in state_lib.lua
-- KEYS[5] tenant index (zset by seq)   KEYS[6] tenant seq counter
-- KEYS[7] the new session's index   KEYS[8] the stored session's index,
-- as the client guessed it (a session index key nobody uses when none)
-- ARGV[5] expected version   ARGV[6] new session   ARGV[7] the session
-- KEYS[8] belongs to   ARGV[8] status   ARGV[9] data   ARGV[10] now (ns)
-- ARGV[11] fence ('0' unfenced)
-- KEYS[9], KEYS[10] the run's versions and their records, ARGV[12] how
-- many to keep, ARGV[13] the age cutoff (state_versions_lib.lua)
--
-- A put of an existing run keeps the run as it was as a version when
-- ARGV[12] is above 0, and prunes the versions past the bounds; at 0 it
-- keeps one only while versions kept under another policy are left.
--
-- Returns {1, hash fields..., data} when written (or written by an
-- earlier try of this call), {4, stored fence} when the run exists and
-- its fence is above the put's, {0, stored version} on conflict, and
-- {2, stored session} when the run is in a session other than the one
-- whose index the client declared: nothing was written, and the client
-- calls again declaring that session's index, so that every key the
-- script touches is one Redis Cluster routed and checked.
local done = replayed('p')
if done then
  return reply(done, ARGV[9])
end
-- A put that keeps versions reads the whole hash (the version it keeps)
-- in the same call as the fields it checks.
local keep, all, h = tonumber(ARGV[12]), nil, nil
if keep > 0 then
  all = redis.call('HGETALL', KEYS[2])
  h = {field(all, 'v') or false, field(all, 'se') or false, field(all, 'seq') or false, field(all, 'f') or false}
else
  h = redis.call('HMGET', KEYS[2], 'v', 'se', 'seq', 'f')
end
local stored, old, seq, fence = h[1], h[2] or '', h[3], ARGV[11]
if stored and stale(h[4], fence) then
  return {4, h[4]}
end
if (stored or '0') ~= ARGV[5] then
  return {0, stored or '0'}
end
if stored and old ~= '' and old ~= ARGV[7] then
  return {2, old}
end

local session, now = ARGV[6], ARGV[10]
if not stored then
  seq = redis.call('INCR', KEYS[6])
  redis.call('HSET', KEYS[2], 'v', 1, 'seq', seq, 'it', 0, 'ot', 0, 'c', 0, 'i', 0, 'cur', 0,
    'ca', now, 'ua', now, 'st', ARGV[8], 'se', session)
  raise_fence(KEYS[2], false, fence)
  redis.call('ZADD', KEYS[5], seq, ID)
  if session ~= '' then
    redis.call('ZADD', KEYS[7], seq, ID)
  end
else
  if keep > 0 then
    keep_version(all, KEYS[1], KEYS[9], KEYS[10], false)
  end
  local left = prune_versions(KEYS[9], KEYS[10], keep, ARGV[13])
  if keep == 0 and left > 0 then
    -- A store keeping none meets versions kept under another policy,
    -- more than one prune deletes: the blob this put replaces is kept
    -- with them, since those a patch kept read theirs from the next newer
    -- version holding one, or the run's.
    keep_version(redis.call('HGETALL', KEYS[2]), KEYS[1], KEYS[9], KEYS[10], false)
  end
  if old ~= session then
    if old ~= '' then
      redis.call('ZREM', KEYS[8], ID)
    end
    if session ~= '' then
      redis.call('ZADD', KEYS[7], seq, ID)
    end
  end
  redis.call('HINCRBY', KEYS[2], 'v', 1)
  redis.call('HSET', KEYS[2], 'ua', now, 'st', ARGV[8], 'se', session)
  raise_fence(KEYS[2], h[4], fence)
  -- The replay marker of earlier releases: one per run, overwritten by
  -- the next put, which is why it could not recognise a replay.
  redis.call('HDEL', KEYS[2], 'wn')
end
redis.call('SET', KEYS[1], ARGV[9])
remember('p')
return reply(redis.call('HGETALL', KEYS[2]), ARGV[9])
