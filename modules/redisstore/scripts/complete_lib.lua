-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call; each queue's leases are
-- read with one HMGET and dropped with one HDEL of the records, one of the
-- leases and one ZREM.
--
-- complete reads groups of one queue each: from KEYS[fk] on, three keys
-- per group (the queue's ITEMS, LEASE and LEASES), and from ARGV[fa] on,
-- how many leases the group has, then ref and token per lease. It returns
-- the 1-based positions (counted over all groups) of the leases that were
-- lost, ascending. Every group is read before the first is written:
-- completeRead reads and returns the positions lost and what to drop,
-- completeWrite drops it.
local function completeRead(fa, fk)
  local lost, k, i, key = {}, 0, fa, fk
  local drops = {}
  while i <= #ARGV do
    local n = tonumber(ARGV[i])
    local refs = {}
    for j = 1, n do
      refs[j] = ARGV[i + 2 * j - 1]
    end
    local vals = redis.call('HMGET', KEYS[key + 1], unpack(refs))
    -- A claimed batch shares one lease value, so each distinct value is
    -- parsed once.
    local toks, ok, seen = {}, {}, {}
    for j = 1, n do
      local v, ref = vals[j], refs[j]
      local tok = v and toks[v]
      if v and tok == nil then
        tok = string.match(v, '^(%d+)|') or false
        toks[v] = tok
      end
      k = k + 1
      if tok and tok == ARGV[i + 2 * j] and not seen[ref] then
        seen[ref] = true
        ok[#ok + 1] = ref
      else
        lost[#lost + 1] = k
      end
    end
    if #ok > 0 then
      drops[#drops + 1] = {key, ok}
    end
    i = i + 1 + 2 * n
    key = key + 3
  end
  return lost, drops
end

local function completeWrite(drops)
  for _, d in ipairs(drops) do
    local key, ok = d[1], d[2]
    redis.call('HDEL', KEYS[key], unpack(ok))
    redis.call('HDEL', KEYS[key + 1], unpack(ok))
    redis.call('ZREM', KEYS[key + 2], unpack(ok))
  end
end

local function complete(fa, fk)
  local lost, drops = completeRead(fa, fk)
  completeWrite(drops)
  return lost
end
