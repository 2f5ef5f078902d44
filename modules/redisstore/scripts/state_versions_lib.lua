-- The kept versions of a run (after state_int64.lua). Two keys of the
-- run, in its tenant's slot like the rest of it:
--
--   versions   zset, score the version: member '<version>:<updated ns>',
--              so pruning by age reads no record
--   vdata      hash: '<version>' -> the run's hash fields as they were
--              (a cjson list of field, value, ...), '<version>:d' -> its
--              blob, the same value the run held (within MaxValueBytes).
--              A version kept by a write that leaves the blob as it is
--              (a patch) has no '<version>:d': its blob is that of the
--              next newer version that has one, or the run's own when
--              none has. Pruning goes oldest first, so the version a blob
--              is taken from outlives every version that takes it.
--
-- A version is kept while it is one of the run's newest `keep` versions
-- and its updated time is after `cutoff` (unix ns, '' for no age limit).
-- Reads apply both bounds themselves; writes delete what is past them,
-- at most PRUNE_BATCH versions per write.

-- PRUNE_BATCH is contract.VersionPruneBatch (a unit test holds them
-- equal).
local PRUNE_BATCH = 100

-- expired reports whether the version of member m is past cutoff.
local function expired(m, cutoff)
  return cutoff ~= '' and not below(cutoff, m:match(':(%-?%d+)$'))
end

local function version_of(m)
  return m:match('^(%d+):')
end

-- field returns the value of field f in the flat list h (HGETALL's).
local function field(h, f)
  for i = 1, #h, 2 do
    if h[i] == f then
      return h[i + 1]
    end
  end
  return nil
end

-- keep_version keeps the run as it is now (its hash h, read with
-- HGETALL, and its blob key) as a version, before a write changes it;
-- with same set the write leaves the blob as it is, so the version keeps
-- none of its own (see vdata).
local function keep_version(h, blob, versions, vdata, same)
  local v = field(h, 'v')
  if same then
    redis.call('HSET', vdata, v, cjson.encode(h))
  else
    redis.call('HSET', vdata, v, cjson.encode(h), v .. ':d', redis.call('GET', blob) or '')
  end
  redis.call('ZADD', versions, v, v .. ':' .. (field(h, 'ua') or '0'))
end

-- prune_versions deletes up to PRUNE_BATCH versions past the bounds: the
-- oldest beyond the newest keep, then the oldest by version while their
-- time is past cutoff. A version past the age behind a younger older one
-- (clients whose clocks disagree) waits for that one; reads skip it.
-- It returns how many versions are left.
local function prune_versions(versions, vdata, keep, cutoff)
  local n = redis.call('ZCARD', versions)
  if n == 0 then
    return 0
  end
  local fields, dropped = {}, 0
  local function forget(m)
    local v = version_of(m)
    fields[#fields + 1] = v
    fields[#fields + 1] = v .. ':d'
    dropped = dropped + 1
  end
  if n > keep then
    local popped = redis.call('ZPOPMIN', versions, math.min(n - keep, PRUNE_BATCH))
    for i = 1, #popped, 2 do
      forget(popped[i])
    end
  end
  if cutoff ~= '' and dropped < PRUNE_BATCH and dropped < n then
    local first = redis.call('ZRANGE', versions, 0, 0)
    if expired(first[1], cutoff) then
      local aged = {}
      for _, m in ipairs(redis.call('ZRANGE', versions, 0, PRUNE_BATCH - dropped - 1)) do
        if not expired(m, cutoff) then
          break
        end
        aged[#aged + 1] = m
        forget(m)
      end
      redis.call('ZREM', versions, unpack(aged))
    end
  end
  if #fields > 0 then
    redis.call('HDEL', vdata, unpack(fields))
  end
  return n - dropped
end

-- kept_member returns the member of version v (decimal) when it is kept
-- under the bounds, else nil.
local function kept_member(versions, v, keep, cutoff)
  if keep == 0 then
    return nil
  end
  local m = redis.call('ZRANGE', versions, v, v, 'BYSCORE')[1]
  if not m or expired(m, cutoff) then
    return nil
  end
  if redis.call('ZCOUNT', versions, '(' .. v, '+inf') >= keep then
    return nil
  end
  return m
end

-- version_record returns version v's hash fields (a flat list) and blob,
-- of the run whose blob and versions keys are given. memo, when given,
-- holds the blobs found by earlier calls of one script (by version), so
-- that listing versions newest first walks each one once.
local function version_record(vdata, v, blob, versions, memo)
  local got = redis.call('HMGET', vdata, v, v .. ':d')
  local fields = cjson.decode(got[1])
  if got[2] then
    return fields, got[2]
  end
  local data
  for _, m in ipairs(redis.call('ZRANGE', versions, '(' .. v, '+inf', 'BYSCORE')) do
    local u = version_of(m)
    data = memo and memo[u] or redis.call('HGET', vdata, u .. ':d')
    if data then
      break
    end
  end
  data = data or redis.call('GET', blob) or ''
  if memo then
    memo[v] = data
  end
  return fields, data
end
