-- Removes completed items, each fenced on its own token. Items of several
-- queues of one namespace may come in one call; each queue's leases are
-- read with one HMGET and dropped with one DEL, HDEL and ZREM.
--
-- complete reads, from ARGV[first] on, per lease: queue prefix, ref, token.
-- It returns the 1-based positions of the leases that were lost, ascending.
local function complete(first)
  local groups, order = {}, {}
  local k = 0
  for i = first, #ARGV, 3 do
    k = k + 1
    local q = ARGV[i]
    local g = groups[q]
    if not g then
      g = {refs = {}, toks = {}, pos = {}}
      groups[q] = g
      order[#order + 1] = q
    end
    g.refs[#g.refs + 1] = ARGV[i + 1]
    g.toks[#g.toks + 1] = ARGV[i + 2]
    g.pos[#g.pos + 1] = k
  end
  local lost = {}
  for _, q in ipairs(order) do
    local g = groups[q]
    local vals = redis.call('HMGET', q .. 'lease', unpack(g.refs))
    local refs, keys, seen = {}, {}, {}
    for j, v in ipairs(vals) do
      local tok = v and string.match(v, '^(%d+)|')
      local ref = g.refs[j]
      if tok and tok == g.toks[j] and not seen[ref] then
        seen[ref] = true
        refs[#refs + 1] = ref
        keys[#keys + 1] = q .. 'item:' .. ref
      else
        lost[#lost + 1] = g.pos[j]
      end
    end
    if #refs > 0 then
      redis.call('DEL', unpack(keys))
      redis.call('HDEL', q .. 'lease', unpack(refs))
      redis.call('ZREM', q .. 'leases', unpack(refs))
    end
  end
  table.sort(lost)
  return lost
end
