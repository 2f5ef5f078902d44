-- Reads one page of a run's versions, newest first: the run as it is
-- (on the first page only), then its kept versions by descending version
-- below the cursor, within the bounds.
--
-- KEYS[1] run blob   KEYS[2] run hash   KEYS[3] versions   KEYS[4] vdata
-- ARGV[1] cursor: list versions below it ('' for the first page)
-- ARGV[2] page size   ARGV[3] how many versions are kept
-- ARGV[4] the age cutoff (unix ns, '' for none; state_versions_lib.lua)
--
-- Returns {0} when the run does not exist, else {1, more, entries...}:
-- each entry a list of hash fields then the blob, more 1 when a later
-- page has any.
local h = redis.call('HGETALL', KEYS[2])
if #h == 0 then
  return {0}
end
local limit, keep, cutoff = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local out = {1, 0}
if ARGV[1] == '' then
  h[#h + 1] = redis.call('GET', KEYS[1]) or ''
  out[#out + 1] = h
end
if keep == 0 then
  return out
end
-- The oldest version still among the newest keep.
local floor = '-inf'
local nth = redis.call('ZRANGE', KEYS[3], keep - 1, keep - 1, 'REV', 'WITHSCORES')
if #nth > 0 then
  floor = nth[2]
end
local top = ARGV[1] == '' and '+inf' or '(' .. ARGV[1]
local picked, offset = {}, 0
local want = limit + 1 - (#out - 2)
while #picked < want do
  local n = want - #picked
  local ms = redis.call('ZRANGE', KEYS[3], top, floor, 'BYSCORE', 'REV', 'LIMIT', offset, n)
  for _, m in ipairs(ms) do
    if not expired(m, cutoff) then
      picked[#picked + 1] = version_of(m)
    end
  end
  if #ms < n then
    break
  end
  offset = offset + #ms
end
local memo = {}
for _, v in ipairs(picked) do
  if #out - 2 == limit then
    out[2] = 1
    break
  end
  local fields, data = version_record(KEYS[4], v, KEYS[1], KEYS[3], memo)
  fields[#fields + 1] = data
  out[#out + 1] = fields
end
return out
