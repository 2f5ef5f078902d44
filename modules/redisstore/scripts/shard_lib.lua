-- What a sharded queue's claims read of one shard to deal their turns
-- between shards (see shard_claim.go). Appended to each shard's claim
-- reply, so that the next claim deals by what this one left, and read
-- alone (shard_heads.lua) where no claim went. Reads only.

-- shardHeads lists the shard's tenants with due work at now (us), in the
-- order its next claim serves them, at most max: those of the rotation
-- merged by turn stamp with the waiting ones whose first item is due by
-- now (they rejoin at their stamp), then those of waits that timed out by
-- now (they join behind). Returns {the tenants, for each 1 if it is
-- paused else 0, when the next waiting tenant or wait falls due (us, -1
-- for none)}. While the whole queue is paused no tenant is marked: the
-- claims say so.
local function shardHeads(rot, wait, turns, waits, life, now, max)
  local all = {}
  local r = redis.call('ZRANGE', rot, '-inf', '(+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, max)
  for j = 1, #r, 2 do
    all[#all + 1] = {r[j], tonumber(r[j + 1])}
  end
  local woke = redis.call('ZRANGE', wait, '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
  if #woke > 0 then
    local st = redis.call('HMGET', turns, unpack(woke))
    for j, t in ipairs(woke) do
      all[#all + 1] = {t, tonumber(st[j] or '0') or 0}
    end
  end
  table.sort(all, function(a, b)
    if a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return a[1] < b[1]
  end)
  local out, seen = {}, {}
  for j = 1, math.min(#all, max) do
    out[j] = all[j][1]
    seen[all[j][1]] = true
  end
  if #out < max then
    local refs = redis.call('ZRANGE', waits, '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
    for _, ref in ipairs(refs) do
      local c = string.find(ref, ':', 1, true)
      if c and #out < max then
        local t = string.sub(ref, c + 1, c + tonumber(string.sub(ref, 1, c - 1)))
        if not seen[t] then
          out[#out + 1] = t
          seen[t] = true
        end
      end
    end
  end
  local paused = {}
  local some = tonumber(redis.call('HGET', life, 'n') or '0') > 0 and redis.call('HGET', life, 'q') ~= '1'
  for j, t in ipairs(out) do
    paused[j] = 0
    if some and redis.call('HGET', life, 't' .. #t .. ':' .. t) == '1' then
      paused[j] = 1
    end
  end
  -- The first score past now of each set; the placeholder's +inf is none.
  local due = -1
  for _, z in ipairs({wait, waits}) do
    local f = redis.call('ZRANGE', z, '(' .. now, '+inf', 'BYSCORE', 'WITHSCORES', 'LIMIT', 0, 1)
    local at = f[2] and tonumber(f[2])
    if at and at ~= math.huge and (due < 0 or at < due) then
      due = at
    end
  end
  return {out, paused, string.format('%.0f', due)}
end
