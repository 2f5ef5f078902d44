-- Reads a run's hash and blob together, so a reader never pairs one
-- write's counters with another write's data.
--
-- KEYS[1] run blob   KEYS[2] run hash
-- Returns {} when missing, or {hash fields..., data}.
local out = redis.call('HGETALL', KEYS[2])
if #out == 0 then
  return {}
end
table.insert(out, redis.call('GET', KEYS[1]) or '')
return out
