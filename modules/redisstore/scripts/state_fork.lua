-- Creates a run from a version of another run of the tenant: its data,
-- status, session and counters, at version 1, with no fence and no
-- versions, and a new seq. Like a put that creates, a fork sent again
-- after its reply was lost finds its record and answers the run it made.
--
-- KEYS[1..4] and ARGV[1..4] as in state_lib.lua, for the new run
-- KEYS[5] tenant index   KEYS[6] tenant seq counter
-- KEYS[7] the index of the session the client expects the version in
-- KEYS[8] source blob   KEYS[9] source hash   KEYS[10] source versions
-- KEYS[11] source vdata
-- ARGV[5] the version (decimal)   ARGV[6] the session KEYS[7] belongs to
-- ARGV[7] how many versions are kept   ARGV[8] the age cutoff
-- ARGV[9] now (unix ns)
--
-- Returns {1, hash fields..., data} when made (or made by an earlier try
-- of this call: then the blob is the one the new run holds now), {0}
-- when the source run or its version is not kept, {5, stored version}
-- when the new id is taken, {2, session} when the version is in a
-- session other than the one declared (nothing written; call again
-- declaring it).
local done = replayed('k')
if done then
  return reply(done, redis.call('GET', KEYS[1]) or '')
end
local src = redis.call('HGETALL', KEYS[9])
if #src == 0 then
  return {0}
end
local from, data = src, nil
if field(src, 'v') == ARGV[5] then
  data = redis.call('GET', KEYS[8]) or ''
else
  if not kept_member(KEYS[10], ARGV[5], tonumber(ARGV[7]), ARGV[8]) then
    return {0}
  end
  from, data = version_record(KEYS[11], ARGV[5], KEYS[8], KEYS[10])
end
local taken = redis.call('HGET', KEYS[2], 'v')
if taken then
  return {5, taken}
end
local session = field(from, 'se') or ''
if session ~= ARGV[6] then
  return {2, session}
end

local now = ARGV[9]
local seq = redis.call('INCR', KEYS[6])
redis.call('HSET', KEYS[2], 'v', 1, 'seq', seq,
  'it', field(from, 'it') or 0, 'ot', field(from, 'ot') or 0, 'c', field(from, 'c') or 0,
  'i', field(from, 'i') or 0, 'cur', field(from, 'cur') or 0,
  'ca', now, 'ua', now, 'st', field(from, 'st') or '', 'se', session)
redis.call('SET', KEYS[1], data)
redis.call('ZADD', KEYS[5], seq, ID)
if session ~= '' then
  redis.call('ZADD', KEYS[7], seq, ID)
end
remember('k')
return reply(redis.call('HGETALL', KEYS[2]), data)
