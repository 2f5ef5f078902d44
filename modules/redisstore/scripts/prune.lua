-- Removes up to ARGV[2] finished items, oldest first, that are past the
-- queue's retention and their uniqueness windows, with their events:
-- from the oldest ARGV[3] members of FIN only, so a call's work is
-- bounded whatever the queue holds. A member whose record is gone or no
-- longer finished is dropped from FIN without being counted.
--
-- ARGV[1] now (us)   ARGV[2] most to remove   ARGV[3] most members read
-- ARGV[4] (a shard of a sharded queue) how many of its newest finished
-- items the retention's Count keeps here, '' for the Count itself
-- Returns how many items it removed.
local cfg = histCfg(LIFE)
if not cfg then
  return 0
end
local now = tonumber(ARGV[1])
local batch = tonumber(ARGV[2])
local ms = redis.call('ZRANGE', FIN, '[0', '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
if #ms == 0 then
  return 0
end
local total = cfg.count > 0 and redis.call('ZLEXCOUNT', FIN, '[0', '+') or 0
local keep = cfg.count
if ARGV[4] and ARGV[4] ~= '' then
  keep = tonumber(ARGV[4])
end
local refs, fins = {}, {}
for j, m in ipairs(ms) do
  fins[j] = tonumber(string.sub(m, 1, 16), 16)
  local rest = string.sub(m, 17)
  local z = string.find(rest, '\0', 1, true)
  refs[j] = lp(string.sub(rest, 1, z - 1)) .. lp(string.sub(rest, z + 1))
end
local vals = redis.call('HMGET', ITEMS, unpack(refs))
local del, drop, cdel = {}, {}, {}
for j, m in ipairs(ms) do
  if #del >= batch then
    break
  end
  local r = decode(vals[j])
  if not r or (r.s ~= 'k' and r.s ~= 'c') then
    drop[#drop + 1] = m
  else
    local X = xget(r)
    local fa = fins[j]
    local go = false
    if X.uf == '' or fa + tonumber(X.uf) <= now then
      if cfg.keeps then
        go = (cfg.age > 0 and fa + cfg.age <= now) or (cfg.count > 0 and j <= total - keep)
      else
        go = r.s == 'k'
      end
    end
    if go then
      del[#del + 1] = refs[j]
      drop[#drop + 1] = m
      if r.s == 'c' then
        cdel[#cdel + 1] = refs[j]
      end
    end
  end
end

-- Writes from here on.
if #drop > 0 then
  redis.call('ZREM', FIN, unpack(drop))
end
if #del > 0 then
  redis.call('HDEL', ITEMS, unpack(del))
  histDrop(QK, del, true)
end
if #cdel > 0 then
  redis.call('ZREM', CANCELS, unpack(cdel))
end
return #del
