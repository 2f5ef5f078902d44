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
-- ARGV[10] nonce of this call: the refs and token of the last 1024 claims
-- are kept by nonce, so a retry of a claim whose reply was lost gets the
-- same leases back (those still held) instead of leasing more.
-- claim returns the token, then the records of the items it leased; the
-- caller fills in the leases. It reads its arguments from ARGV, so a
-- script that calls it keeps ARGV[1..10] as above.
--
-- One claim issues one fencing token for its whole batch: a token is
-- never issued twice for the same item, which is what fencing needs, and
-- the batch then shares one lease value.
--
-- Every string a script makes costs about as much as a redis.call here
-- (a fraction of a microsecond, but a batch of 100 used to make
-- thousands), so each item costs the strings Redis hands the script (its
-- ready member and record) and one cut for its ref; everything written
-- per claim is built once.
local function claim()
  local now = tonumber(ARGV[3])
  local max = tonumber(ARGV[8])

  -- The memo is the token, ':', then the refs (each lp(tenant) lp(id),
  -- which delimits itself).
  local done = recall(ARGV[10])
  if done then
    local c = string.find(done, ':', 1, true)
    local tok = string.sub(done, 1, c - 1)
    local out = {tonumber(tok)}
    for _, ref in ipairs(refsIn(done, c + 1)) do
      local l = lease(redis.call('HGET', LEASE, ref))
      local rec = l and l.tok == tok and redis.call('HGET', ITEMS, ref)
      if rec then
        out[#out + 1] = rec
      end
    end
    if #out == 1 then
      return {}
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
  local pt, pm, np = {}, {}, 0 -- the plan: tenant index and member of each item
  local served = {}     -- tenant index -> members taken
  local stamp = {}      -- tenant index -> its last turn
  local touched = {}    -- tenant index -> true when served or found empty
  local active = #L
  while np < max and active > 0 do
    active = 0
    for i = 1, #L do
      if np >= max then
        break
      end
      if pos[i] > #due[i] and more[i] then
        local want = max - np
        local ms = redis.call('ZRANGE', kready(L[i]), '-inf', ARGV[3], 'BYSCORE', 'LIMIT', fetched[i], want)
        due[i], pos[i], fetched[i], more[i] = ms, 1, fetched[i] + #ms, #ms == want
      end
      if pos[i] <= #due[i] then
        local m = due[i][pos[i]]
        pos[i] = pos[i] + 1
        np = np + 1
        pt[np], pm[np] = i, m
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

  -- Lease the items: one HMGET of the records, one HSET of the lease
  -- hash and one ZADD for the batch.
  if np == 0 then
    return {}
  end
  local refs = {}
  for k = 1, np do
    refs[k] = string.sub(pm[k], 17)
  end
  local recs = redis.call('HMGET', ITEMS, unpack(refs))
  local out, taken = {0}, {}
  for k = 1, np do
    local rec = recs[k]
    if rec then
      local j = #taken + 1
      taken[j], out[j + 1] = refs[k], rec
    end
  end
  local n = #taken
  if n == 0 then
    return {}
  end
  local tok, stok = nextToken()
  out[1] = tok
  local val = stok .. '|' .. ARGV[5] .. '|' .. ARGV[6] .. '|||' .. ARGV[7]
  local lv, lz = {}, {}
  for j = 1, n do
    lv[2 * j - 1], lv[2 * j] = taken[j], val
    lz[2 * j - 1], lz[2 * j] = ARGV[5], taken[j]
  end
  redis.call('HSET', LEASE, unpack(lv))
  local all = table.concat(taken)
  remember(ARGV[10], stok .. ':' .. all)
  redis.call('ZADD', LEASES, unpack(lz))
  -- One log entry per claim; the log keeps as many claims as turns are
  -- wanted (each claim holds one turn or more), trimmed in steps of 64.
  local keep = tonumber(ARGV[9])
  if redis.call('LPUSH', Q .. 'log', lp(ARGV[7]) .. lp(ARGV[4]) .. all) > keep + 64 then
    redis.call('LTRIM', Q .. 'log', 0, keep - 1)
  end
  return out
end
