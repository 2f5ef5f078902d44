-- Leases up to max due items of one queue in tenant rotation: the tenant
-- at the head of the rotation gives its first due item and goes to the
-- back, round after round, until the batch is full or no tenant has a due
-- item. Taking the item out of its ready set and writing its lease happen
-- in this one script, so there is no window in which an item is in
-- neither place.
--
-- The rounds are worked out in memory first: the first max tenants of
-- the rotation are the only ones a batch of max can reach (each has a due
-- item, or it would not be there), and each tenant's due items are read
-- in one range. The writes then go per tenant, not per turn.
--
-- ARGV[3] now (us)   ARGV[4] now (ns)   ARGV[5] expiry (us)   ARGV[6] expiry (ns)
-- ARGV[7] worker   ARGV[8] max   ARGV[9] how many turns the log keeps
-- ARGV[10] nonce of this call: the refs and tokens of the last 1024 claims
-- are kept by nonce, so a retry of a claim whose reply was lost gets the
-- same leases back (those still held) instead of leasing more.
-- claim returns a list of {token, record}; the caller fills in the lease.
-- It reads its arguments from ARGV, so a script that calls it keeps
-- ARGV[1..10] as above.
local function claim()
  local now = tonumber(ARGV[3])
  local max = tonumber(ARGV[8])
  local CLAIMS, RECENT = Q .. 'claims', Q .. 'claimlog'

  local done = redis.call('HGET', CLAIMS, ARGV[10])
  if done then
    local out, pos = {}, 1
    local function field()
      local c = string.find(done, ':', pos, true)
      local n = tonumber(string.sub(done, pos, c - 1))
      local v = string.sub(done, c + 1, c + n)
      pos = c + n + 1
      return v
    end
    while pos <= #done do
      local ref = field()
      local tok = field()
      local l = lease(redis.call('HGET', LEASE, ref))
      local rec = l and l.tok == tok and redis.call('GET', kitem(ref))
      if rec then
        out[#out + 1] = {tonumber(tok), rec}
      end
    end
    return out
  end

  -- Tenants whose delayed items fell due rejoin the rotation at their stamp.
  local woke = redis.call('ZRANGE', WAIT, '-inf', ARGV[3], 'BYSCORE')
  if #woke > 0 then
    redis.call('ZREMRANGEBYSCORE', WAIT, '-inf', ARGV[3])
    for _, t in ipairs(woke) do
      place(t, now)
    end
  end

  local L = redis.call('ZRANGE', ROT, 0, max - 1)
  if #L == 0 then
    return {}
  end

  -- Plan the rounds.
  local due, pos, fetched, more = {}, {}, {}, {}
  local chunk = math.ceil(max / #L) + 1 -- one more than a round needs: a look at what stays due
  for i, t in ipairs(L) do
    local ms = redis.call('ZRANGE', kready(t), '-inf', ARGV[3], 'BYSCORE', 'LIMIT', 0, chunk)
    due[i], pos[i], fetched[i], more[i] = ms, 1, #ms, #ms == chunk
  end
  local turn = tonumber(redis.call('GET', Q .. 'turn') or '0')
  local plan = {}       -- {tenant index, member}
  local served = {}     -- tenant index -> members taken
  local stamp = {}      -- tenant index -> its last turn
  local touched = {}    -- tenant index -> true when served or found empty
  local active = #L
  while #plan < max and active > 0 do
    active = 0
    for i = 1, #L do
      if #plan >= max then
        break
      end
      if pos[i] > #due[i] and more[i] then
        local want = max - #plan
        local ms = redis.call('ZRANGE', kready(L[i]), '-inf', ARGV[3], 'BYSCORE', 'LIMIT', fetched[i], want)
        due[i], pos[i], fetched[i], more[i] = ms, 1, fetched[i] + #ms, #ms == want
      end
      if pos[i] <= #due[i] then
        local m = due[i][pos[i]]
        pos[i] = pos[i] + 1
        plan[#plan + 1] = {i, m}
        turn = turn + 1
        stamp[i] = turn
        local s = served[i]
        if not s then
          s = {}
          served[i] = s
        end
        s[#s + 1] = m
        touched[i] = true
        active = active + 1
      elseif fetched[i] == 0 then
        touched[i] = true -- in the rotation without a due item (the clock went back)
      end
    end
  end

  -- Take the items out of the ready sets and give each touched tenant its
  -- new place: the back of the rotation if it still has a due item.
  for i = 1, #L do
    if touched[i] then
      local t = L[i]
      local rk = kready(t)
      if served[i] then
        redis.call('ZREM', rk, unpack(served[i]))
        redis.call('HSET', TURNS, t, stamp[i])
        redis.call('HINCRBY', Q .. 'served', t, #served[i])
      end
      if stamp[i] and pos[i] <= #due[i] then
        -- Items this claim read but did not take are due: back of the rotation.
        redis.call('ZADD', ROT, stamp[i], t)
      else
        local first = redis.call('ZRANGE', rk, 0, 0, 'WITHSCORES')
        if #first == 0 then
          redis.call('ZREM', ROT, t)
        elseif tonumber(first[2]) <= now then
          if stamp[i] then
            redis.call('ZADD', ROT, stamp[i], t)
          end
        else
          redis.call('ZREM', ROT, t)
          redis.call('ZADD', WAIT, first[2], t)
        end
      end
    end
  end
  redis.call('SET', Q .. 'turn', turn)

  -- Lease the items: one HSET of the lease hash and one ZADD for the batch.
  local taken, recs = {}, {}
  for _, p in ipairs(plan) do
    local t, id = L[p[1]], string.sub(p[2], 17)
    local ref = lp(t) .. lp(id)
    local rec = redis.call('GET', kitem(ref))
    if rec then
      taken[#taken + 1] = {t, id, ref}
      recs[#recs + 1] = rec
    end
  end
  local n = #taken
  if n == 0 then
    return {}
  end
  local last = redis.call('INCRBY', NS .. 'token', n)
  local out, log, lz, lv = {}, {}, {}, {}
  local tail = '|' .. ARGV[5] .. '|' .. ARGV[6] .. '|||' .. ARGV[7]
  for k, it in ipairs(taken) do
    local tok = last - n + k
    out[k] = {tok, recs[k]}
    log[k] = lp(it[1]) .. lp(it[2]) .. lp(ARGV[7]) .. ARGV[4]
    lz[2 * k - 1] = ARGV[5]
    lz[2 * k] = it[3]
    lv[2 * k - 1] = it[3]
    lv[2 * k] = tok .. tail
  end
  redis.call('HSET', LEASE, unpack(lv))
  local memo = {}
  for k, it in ipairs(taken) do
    memo[k] = lp(it[3]) .. lp(tostring(last - n + k))
  end
  redis.call('HSET', CLAIMS, ARGV[10], table.concat(memo))
  if redis.call('LPUSH', RECENT, ARGV[10]) > 1024 then
    redis.call('HDEL', CLAIMS, redis.call('RPOP', RECENT))
  end
  redis.call('ZADD', LEASES, unpack(lz))
  -- The log is trimmed in steps of 64 rather than on every claim.
  local keep = tonumber(ARGV[9])
  if redis.call('LPUSH', Q .. 'log', unpack(log)) > keep + 64 then
    redis.call('LTRIM', Q .. 'log', 0, keep - 1)
  end
  return out
end
