-- Reads one page of runs from an index sorted by seq, after a cursor.
-- Seq never changes, so updates made while paging neither skip nor repeat
-- a run.
--
-- KEYS[1] index (tenant or session zset)
-- ARGV[1] tenant key prefix   ARGV[2] after seq (exclusive)
-- ARGV[3] how many to read
-- Returns a list of {hash fields..., data}, one per run.
local function lp(s) return #s .. ':' .. s end
local ids = redis.call('ZRANGE', KEYS[1], '(' .. ARGV[2], '+inf', 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(ids) do
  local h = redis.call('HGETALL', ARGV[1] .. 'meta:' .. lp(id))
  if #h > 0 then
    table.insert(h, 'id')
    table.insert(h, id)
    table.insert(h, redis.call('GET', ARGV[1] .. 'run:' .. lp(id)) or '')
    table.insert(out, h)
  end
end
return out
