-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call; each queue's leases are
-- read with one HMGET and dropped with one HDEL of the records, one of the
-- leases and one ZREM.
--
-- complete reads, from ARGV[first] on, groups of one queue each: the
-- queue prefix, how many leases follow, then ref and token per lease. It
-- returns the 1-based positions (counted over all groups) of the leases
-- that were lost, ascending.
local function complete(first)
  local lost, k, i = {}, 0, first
  while i <= #ARGV do
    local q, n = ARGV[i], tonumber(ARGV[i + 1])
    local refs = {}
    for j = 1, n do
      refs[j] = ARGV[i + 2 * j]
    end
    local vals = redis.call('HMGET', q .. 'lease', unpack(refs))
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
      if tok and tok == ARGV[i + 2 * j + 1] and not seen[ref] then
        seen[ref] = true
        ok[#ok + 1] = ref
      else
        lost[#lost + 1] = k
      end
    end
    if #ok > 0 then
      redis.call('HDEL', q .. 'items', unpack(ok))
      redis.call('HDEL', q .. 'lease', unpack(ok))
      redis.call('ZREM', q .. 'leases', unpack(ok))
    end
    i = i + 2 + 2 * n
  end
  return lost
end
