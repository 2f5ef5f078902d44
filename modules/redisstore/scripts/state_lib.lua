-- Shared by the state write scripts (put, patch, delete, fork), after
-- state_int64.lua. Each is one step: every read and check comes before
-- the first write, so a script that stops early (refused mid-migration,
-- a conflict, a fence, an overflow) has written nothing and can be sent
-- again.
--
-- KEYS[1] run blob   KEYS[2] run hash
-- KEYS[3] the tenant's replay set (nonce, scored by the ms it landed)
-- KEYS[4] the tenant's replay outcomes (nonce -> what the call did)
-- ARGV[1] nonce of this call (16 hex digits)   ARGV[2] now (unix ms)
-- ARGV[3] records older than this (unix ms) are forgotten   ARGV[4] run id
-- (a nonce is drawn per call from 64 random bits, so a record found under
-- it is this call's)
--
-- A call whose reply was lost is sent again with the same nonce. Every
-- write records what it did under its nonce, in the tenant's keys rather
-- than the run's, so the record outlives a delete of the run; a resent
-- call finds it and answers with it instead of running against the run as
-- it is now. Records live for the replay window and are trimmed by score,
-- a few per call, never by TTL (no key of a run may expire).
local NONCE, NOW, FORGET, ID = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- The run hash fields a record keeps, in the order it keeps them.
local RECORDED
RECORDED = {'v', 'seq', 'it', 'ot', 'c', 'i', 'cur', 'ca', 'ua', 'st', 'se', 'f'}

-- replayed returns the hash fields an earlier try of this call left, as
-- it recorded them, or nil when there was none.
local function replayed(kind)
  local rec = redis.call('HGET', KEYS[4], NONCE)
  if not rec then
    return nil
  end
  local r = cjson.decode(rec)
  if r[1] ~= kind then
    return nil
  end
  local fields = {}
  for n, f in ipairs(RECORDED) do
    if r[n + 1] then
      fields[#fields + 1] = f
      fields[#fields + 1] = r[n + 1]
    end
  end
  return fields
end

-- remember records this call's outcome (its kind and the run hash as it
-- left it, values only: about 100 bytes) and forgets at most 8 expired
-- records, so a call costs a bounded amount however long the tenant was
-- idle.
local function remember(kind)
  local rec = {kind}
  if kind ~= 'd' then
    local vals = redis.call('HMGET', KEYS[2], unpack(RECORDED))
    for n = 1, #RECORDED do
      rec[n + 1] = vals[n] or ''
    end
  end
  redis.call('HSET', KEYS[4], NONCE, cjson.encode(rec))
  redis.call('ZADD', KEYS[3], NOW, NONCE)
  local old = redis.call('ZRANGE', KEYS[3], '-inf', '(' .. FORGET, 'BYSCORE', 'LIMIT', 0, 8)
  if #old > 0 then
    redis.call('HDEL', KEYS[4], unpack(old))
    redis.call('ZREM', KEYS[3], unpack(old))
  end
end

-- stale reports whether a write carrying fence (decimal, '0' unfenced)
-- must be refused by a run whose fence is stored (false, as HMGET
-- answers a missing field, or '' when none): a fenced write below the
-- highest fence that wrote the run. (below is state_int64.lua's.)
local function stale(stored, fence)
  return fence ~= '0' and stored and stored ~= '' and stored ~= fence and below(fence, stored)
end

-- raise_fence records fence as the run's (hash key) when it is above the
-- stored one; an unfenced write leaves the stored fence as it is.
local function raise_fence(key, stored, fence)
  if fence ~= '0' and stored ~= fence and (not stored or stored == '' or below(stored, fence)) then
    redis.call('HSET', key, 'f', fence)
  end
end

-- reply is a run as the write scripts answer it: 1, the hash fields, the
-- blob.
local function reply(fields, data)
  local out = {1}
  for _, f in ipairs(fields) do
    out[#out + 1] = f
  end
  out[#out + 1] = data
  return out
end
