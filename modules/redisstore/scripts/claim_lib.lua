-- Leases up to max due items of one queue in tenant rotation: the tenant
-- at the head of the rotation gives its first due item and goes to the
-- back, round after round, until the batch is full or no tenant has a due
-- item. Taking the item out of READY and writing its lease happen in this
-- one script, so there is no window in which an item is in neither place.
--
-- The rounds are worked out in memory first: the first max tenants of
-- the rotation are the only ones a batch of max can reach (each has a due
-- item, or it would not be there), and each tenant's due items are read
-- in one range. Everything the claim decides on is read before its first
-- write; the writes then go once per key, not per turn.
--
-- ARGV[1] now (us)   ARGV[2] now+1us as 16 hex digits   ARGV[3] now (ns)
-- ARGV[4] expiry (us)   ARGV[5] expiry (ns)   ARGV[6] worker   ARGV[7] max
-- ARGV[8] how many turns the log keeps
-- ARGV[9] nonce of this call: the refs and token of the last 1024 claims
-- are kept by nonce, so a retry of a claim whose reply was lost gets the
-- same leases back (those still held) instead of leasing more.
-- claim returns the token, then the records of the items it leased; the
-- caller fills in the leases. It reads its arguments from ARGV, so a
-- script that calls it keeps ARGV[1..9] as above.
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
-- claimRead does every read and returns either the reply (a replay or
-- an empty claim that changes nothing) or the plan claimWrite carries out.
local function claimRead()
  local now = tonumber(ARGV[1])
  local NX = ARGV[2]
  local max = tonumber(ARGV[7])

  -- The memo is the token, ':', then the refs (each lp(tenant) lp(id),
  -- which delimits itself).
  local done = recall(ARGV[9])
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
      return {reply = {}}
    end
    return {reply = out}
  end

  -- The rotation's head. Tenants whose delayed items fell due rejoin it
  -- at their stamp.
  local L, S = {}, {}
  local head = redis.call('ZRANGE', ROT, '-inf', '(+inf', 'BYSCORE', 'LIMIT', 0, max, 'WITHSCORES')
  for j = 1, #head, 2 do
    L[#L + 1], S[#S + 1] = head[j], tonumber(head[j + 1])
  end
  local woke = redis.call('ZRANGE', WAIT, '-inf', ARGV[1], 'BYSCORE')
  local fromWait = {}
  if #woke > 0 then
    local stamps = redis.call('HMGET', TURNS, unpack(woke))
    local all = {}
    for j = 1, #L do
      all[j] = {L[j], S[j]}
    end
    for j, t in ipairs(woke) do
      fromWait[t] = stamps[j] or '0'
      all[#all + 1] = {t, tonumber(fromWait[t])}
    end
    table.sort(all, function(a, b)
      if a[2] ~= b[2] then
        return a[2] < b[2]
      end
      return a[1] < b[1]
    end)
    L, S = {}, {}
    for j = 1, math.min(#all, max) do
      L[j], S[j] = all[j][1], all[j][2]
    end
  end
  if #L == 0 then
    return {reply = {}}
  end

  -- Plan the rounds.
  local due, pos, fetched, more, lts = {}, {}, {}, {}, {}
  local chunk = math.ceil(max / #L) + 1 -- one more than a round needs: a look at what stays due
  for i, t in ipairs(L) do
    local lt = lp(t)
    local ms = redis.call('ZRANGE', READY, '[' .. lt, '(' .. lt .. NX, 'BYLEX', 'LIMIT', 0, chunk)
    lts[i], due[i], pos[i], fetched[i], more[i] = lt, ms, 1, #ms, #ms == chunk
  end
  local turn = tonumber(redis.call('GET', TURN) or '0')
  local turn0 = turn
  local np = 0
  local taken, refs = {}, {} -- READY members and refs of the batch
  local served = {}   -- tenant index -> items taken
  local stamp = {}    -- tenant index -> its last turn
  local touched = {}  -- tenant index -> true when served or found empty
  local active = #L
  while np < max and active > 0 do
    active = 0
    for i = 1, #L do
      if np >= max then
        break
      end
      if pos[i] > #due[i] and more[i] then
        local want = max - np
        local ms = redis.call('ZRANGE', READY, '[' .. lts[i], '(' .. lts[i] .. NX, 'BYLEX', 'LIMIT', fetched[i], want)
        due[i], pos[i], fetched[i], more[i] = ms, 1, fetched[i] + #ms, #ms == want
      end
      if pos[i] <= #due[i] then
        local m = due[i][pos[i]]
        pos[i] = pos[i] + 1
        np = np + 1
        taken[np] = m
        refs[np] = string.sub(m, #lts[i] + 33)
        turn = turn + 1
        stamp[i] = turn
        served[i] = (served[i] or 0) + 1
        touched[i] = true
        active = active + 1
      elseif fetched[i] == 0 then
        touched[i] = true -- in the rotation without a due item (the clock went back)
      end
    end
  end

  -- Where each touched tenant goes: the back of the rotation while it
  -- has a due item left, the waiting set when its first item is delayed,
  -- nowhere when it has none. Untouched tenants woken from the waiting
  -- set join the rotation at their stamp.
  local rotAdd, rotDel, waitAdd, turnsSet = {}, {}, {}, {}
  for i = 1, #L do
    local t, lt = L[i], lts[i]
    if touched[i] then
      local left = pos[i] <= #due[i]
      if not left and more[i] then
        left = #redis.call('ZRANGE', READY, '[' .. lt, '(' .. lt .. NX, 'BYLEX', 'LIMIT', fetched[i], 1) > 0
      end
      if left then
        rotAdd[#rotAdd + 1] = stamp[i] or S[i]
        rotAdd[#rotAdd + 1] = t
      else
        local f = redis.call('ZRANGE', READY, '[' .. lt .. NX, '(' .. lt .. 'g', 'BYLEX', 'LIMIT', 0, 1)[1]
        if not fromWait[t] then
          rotDel[#rotDel + 1] = t
        end
        if f then
          waitAdd[#waitAdd + 1] = dueOf(lt, f)
          waitAdd[#waitAdd + 1] = t
        end
      end
      if stamp[i] then
        turnsSet[#turnsSet + 1] = t
        turnsSet[#turnsSet + 1] = stamp[i]
      end
    elseif fromWait[t] then
      rotAdd[#rotAdd + 1] = fromWait[t]
      rotAdd[#rotAdd + 1] = t
    end
  end
  if #woke > 0 then
    -- Woken tenants the batch could not reach go back to their turn too.
    local inL = {}
    for i = 1, #L do
      inL[L[i]] = true
    end
    for _, t in ipairs(woke) do
      if not inL[t] then
        rotAdd[#rotAdd + 1] = fromWait[t]
        rotAdd[#rotAdd + 1] = t
      end
    end
  end
  local recs = np > 0 and redis.call('HMGET', ITEMS, unpack(refs)) or {}
  return {woke = #woke > 0, waitAdd = waitAdd, rotAdd = rotAdd, rotDel = rotDel, np = np, taken = taken,
    refs = refs, recs = recs, turnsSet = turnsSet, L = L, served = served, turn = turn, turn0 = turn0}
end

local function claimWrite(c)
  if c.reply then
    return c.reply
  end
  if c.woke then
    redis.call('ZREMRANGEBYSCORE', WAIT, '-inf', ARGV[1])
  end
  if #c.waitAdd > 0 then
    redis.call('ZADD', WAIT, unpack(c.waitAdd))
  end
  if #c.rotAdd > 0 then
    redis.call('ZADD', ROT, unpack(c.rotAdd))
  end
  if #c.rotDel > 0 then
    redis.call('ZREM', ROT, unpack(c.rotDel))
  end
  if c.np == 0 then
    return {}
  end
  redis.call('ZREM', READY, unpack(c.taken))
  redis.call('HSET', TURNS, unpack(c.turnsSet))
  for i = 1, #c.L do
    if c.served[i] then
      redis.call('HINCRBY', SERVED, c.L[i], c.served[i])
    end
  end
  if c.turn ~= c.turn0 then
    redis.call('SET', TURN, c.turn)
  end

  -- Lease the items: one HSET of the lease hash and one ZADD for the
  -- batch. A member whose record is gone (none should be) is dropped.
  local out, got = {0}, {}
  for k = 1, c.np do
    local rec = c.recs[k]
    if rec then
      local j = #got + 1
      got[j], out[j + 1] = c.refs[k], rec
    end
  end
  local n = #got
  if n == 0 then
    return {}
  end
  local tok, stok = nextToken()
  out[1] = tok
  local val = stok .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|||' .. ARGV[6]
  local lv, lz = {}, {}
  for j = 1, n do
    lv[2 * j - 1], lv[2 * j] = got[j], val
    lz[2 * j - 1], lz[2 * j] = ARGV[4], got[j]
  end
  redis.call('HSET', LEASE, unpack(lv))
  local all = table.concat(got)
  remember(ARGV[9], stok .. ':' .. all)
  redis.call('ZADD', LEASES, unpack(lz))
  -- One log entry per claim; the log keeps as many claims as turns are
  -- wanted (each claim holds one turn or more), trimmed in steps of 64.
  local keep = tonumber(ARGV[8])
  if redis.call('LPUSH', LOG, lp(ARGV[6]) .. lp(ARGV[3]) .. all) > keep + 64 then
    redis.call('LTRIM', LOG, 0, keep - 1)
  end
  return out
end

local function claim()
  return claimWrite(claimRead())
end
