-- Reads one version of a run: the run as it is when the version is its
-- current one, else the kept version within the bounds.
--
-- KEYS[1] run blob   KEYS[2] run hash   KEYS[3] versions   KEYS[4] vdata
-- ARGV[1] version (decimal)   ARGV[2] how many versions are kept
-- ARGV[3] the age cutoff (unix ns, '' for none; state_versions_lib.lua)
--
-- Returns {0} when the run or the version is not kept, else {1, hash
-- fields..., data}.
local h = redis.call('HGETALL', KEYS[2])
if #h == 0 then
  return {0}
end
local out = {1}
if field(h, 'v') == ARGV[1] then
  for _, x in ipairs(h) do
    out[#out + 1] = x
  end
  out[#out + 1] = redis.call('GET', KEYS[1]) or ''
  return out
end
if not kept_member(KEYS[3], ARGV[1], tonumber(ARGV[2]), ARGV[3]) then
  return {0}
end
local fields, data = version_record(KEYS[4], ARGV[1], KEYS[1], KEYS[3])
for _, x in ipairs(fields) do
  out[#out + 1] = x
end
out[#out + 1] = data
return out
