-- Sets or removes one limits row of a queue and keeps the queue's flag:
-- '1' while any row exists. While it is on, each change rebuilds TLEASES
-- from the leases held now (the leases of the tenants a cap applies to);
-- turning it off empties TLEASES and drops the weight credits and the
-- index marks (see TRACK in flow_lib.lua) with the field that says
-- whether any exists (ANYTRACK), which turning it on sets to none. Rate
-- buckets and budget usage stay. The claimers are woken: the change may
-- free a held tenant.
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
-- While the flag is on, TLEASES holds the leases of the tenants whose
-- effective limits have a cap (the only ones a claim counts), so every
-- change of a row rebuilds it from the leases held now: one pass over
-- them, and one HMGET of their tenants' rows.
local leases, credits
if on then
  leases = {}
  local refs = redis.call('HKEYS', LEASE)
  local lts, by = {}, {}
  for _, ref in ipairs(refs) do
    if ref ~= '' then
      local lt = tenantOfRef(ref)
      if not by[lt] then
        by[lt] = {}
        lts[#lts + 1] = lt
      end
      local rs = by[lt]
      rs[#rs + 1] = ref
    end
  end
  if #lts > 0 then
    local f = {'0:'}
    for i, lt in ipairs(lts) do
      f[i + 1] = lt
    end
    local v = redis.call('HMGET', LIMITS, unpack(f))
    local function row(i)
      if f[i] == field then
        return val ~= '' and val or false
      end
      return v[i]
    end
    local dflt = flowLimits(row(1) or nil)
    for i, lt in ipairs(lts) do
      local raw = row(i + 1)
      local L = dflt
      if raw then
        L = flowLimits(raw) or dflt
      end
      if L and L.cap > 0 then
        for _, ref in ipairs(by[lt]) do
          leases[#leases + 1] = ref
        end
      end
    end
  end
elseif flag == '1' then
  credits = {}
  for _, f in ipairs(redis.call('HKEYS', FSTATE)) do
    local k = string.sub(f, 1, 1)
    if k == 'c' or k == 'h' or k == '!' or k == TRACK then
      credits[#credits + 1] = f
    end
  end
end

-- Writes from here on.
-- The placeholders of LIMITS and FSTATE hold WIDE, which keeps both out
-- of Redis's packed encoding (see WIDE in queue_lib.lua): every claim of
-- a queue with limits reads a field of each per tenant, and writes
-- FSTATE's. A queue an earlier release made gets them here too.
if not holder then
  redis.call('ZADD', TLEASES, '0', '')
end
redis.call('HSET', LIMITS, '', WIDE)
redis.call('HSET', FSTATE, '', WIDE)
if val == '' then
  if had then
    redis.call('HDEL', LIMITS, field)
  end
else
  redis.call('HSET', LIMITS, field, val)
end
redis.call('SET', FLAG, on and '1' or '0')
if on and flag ~= '1' then
  -- Marks live only while flow is on (turning it off drops them), so
  -- none exists yet: the claims need not read any until one is made.
  redis.call('HSET', FSTATE, ANYTRACK, '0')
end
if leases then
  if flag == '1' then
    redis.call('ZREMRANGEBYLEX', TLEASES, '(', '+')
  end
  local batch = {}
  for _, ref in ipairs(leases) do
    if ref ~= '' then
      batch[#batch + 1] = '0'
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
