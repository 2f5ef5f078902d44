-- Reads runs by id: the ids of one page, which the client read from an
-- index (tenant or session zset, by seq) just before, so that every key
-- this script touches is declared.
--
-- KEYS: for each run, its hash then its blob.
-- Returns a list with one entry per run: {} when the run is gone
-- (deleted since the index was read), else {hash fields..., data}.
local out = {}
for i = 1, #KEYS, 2 do
  local h = redis.call('HGETALL', KEYS[i])
  if #h > 0 then
    table.insert(h, redis.call('GET', KEYS[i + 1]) or '')
  end
  out[#out + 1] = h
end
return out
