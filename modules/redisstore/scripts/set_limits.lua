-- Sets or removes one limits row of a queue and keeps the queue's flag:
-- '1' while any row exists. Turning the flag on builds TLEASES from the
-- leases held now (it is kept only while the flag is on); turning it off
-- empties TLEASES and drops the weight credits. Rate buckets and budget
-- usage stay. The claimers are woken: the change may free a held tenant.
--
-- ARGV[1] the row's field: lp(tenant), or '0:' for the queue's default
-- ARGV[2] the encoded limits (see flow_lib.lua), '' to remove the row
-- ARGV[3] wake channel
-- Returns 1.
local field, val = ARGV[1], ARGV[2]
local flag = redis.call('GET', FLAG)
local holder = redis.call('HEXISTS', LIMITS, '') == 1
local had = redis.call('HEXISTS', LIMITS, field) == 1
local rows = redis.call('HLEN', LIMITS) - (holder and 1 or 0)
if val ~= '' and not had then
  rows = rows + 1
elseif val == '' and had then
  rows = rows - 1
end
local on = rows > 0
local leases, credits
if on and flag ~= '1' then
  leases = redis.call('HKEYS', LEASE)
elseif not on and flag == '1' then
  credits = {}
  for _, f in ipairs(redis.call('HKEYS', FSTATE)) do
    local k = string.sub(f, 1, 1)
    if k == 'c' or k == 'h' or k == '!' then
      credits[#credits + 1] = f
    end
  end
end

-- Writes from here on.
if not holder then
  redis.call('HSET', LIMITS, '', '')
  redis.call('HSET', FSTATE, '', '')
  redis.call('ZADD', TLEASES, 0, '')
end
if val == '' then
  if had then
    redis.call('HDEL', LIMITS, field)
  end
else
  redis.call('HSET', LIMITS, field, val)
end
redis.call('SET', FLAG, on and '1' or '0')
if leases then
  local batch = {}
  for _, ref in ipairs(leases) do
    if ref ~= '' then
      batch[#batch + 1] = 0
      batch[#batch + 1] = ref
      if #batch >= 2000 then
        redis.call('ZADD', TLEASES, unpack(batch))
        batch = {}
      end
    end
  end
  if #batch > 0 then
    redis.call('ZADD', TLEASES, unpack(batch))
  end
elseif credits then
  redis.call('ZREMRANGEBYLEX', TLEASES, '(', '+')
  for j = 1, #credits, 1000 do
    redis.call('HDEL', FSTATE, unpack(credits, j, math.min(j + 999, #credits)))
  end
end
redis.call('PUBLISH', ARGV[3], '1')
return 1
