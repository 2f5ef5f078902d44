-- Requeues or purges dead letters, re-checking each against the filter
-- here, so a bulk action never touches an item outside it even if the
-- item changed since the caller listed it.
--
-- ARGV[1] 'requeue' or 'purge'   ARGV[2] now (us)   ARGV[3] now as 16 hex
-- digits   ARGV[4] now (ns)   ARGV[5] wake channel
-- ARGV[6] tenant ('' any)   ARGV[7] id ('' any)   ARGV[8] error substring
-- ('' any), ASCII-lowered: it is found in the lowered error
-- then refs. Returns how many moved.
local now = tonumber(ARGV[2])
local requeue = ARGV[1] == 'requeue'
local seq = tonumber(redis.call('GET', SEQ) or '0')
local P = newPushes()
P.now = now
local moved, tmoved, recs, purged, seen = {}, {}, {}, {}, {}
for i = 9, #ARGV do
  local ref = ARGV[i]
  local r = not seen[ref] and decode(redis.call('HGET', ITEMS, ref))
  if r and r.s == 'd' and (ARGV[6] == '' or r.t == ARGV[6]) and (ARGV[7] == '' or r.i == ARGV[7])
      and (ARGV[8] == '' or string.find(string.lower(r.e), ARGV[8], 1, true)) then
    seen[ref] = true
    moved[#moved + 1] = ref
    tmoved[#tmoved + 1] = lp(r.t) .. hex16(tonumber(r.ds) or 0) .. ref
    if requeue then
      r.a, r.da, r.ds, r.nb, r.ea = '0', '', '', '', ARGV[4]
      seq = seq + 1
      add(P, r, ref, ARGV[2], ARGV[3], seq)
      recs[#recs + 1] = ref
      recs[#recs + 1] = r
    else
      purged[#purged + 1] = ref
    end
  end
end
if #moved == 0 then
  return 0
end
plan(P)
local E = newEvents(histCfg(LIFE), QK, ARGV[4])
if requeue then
  for j = 1, #recs, 2 do
    if E then
      evAdd(E, recs[j], ev('requeued', ARGV[4], {}))
    end
  end
end

-- Writes from here on.
redis.call('ZREM', DEAD, unpack(moved))
redis.call('ZREM', TDEAD, unpack(tmoved))
if requeue then
  for j = 2, #recs, 2 do
    recs[j] = encode(recs[j])
  end
  redis.call('HSET', ITEMS, unpack(recs))
  redis.call('SET', SEQ, string.format('%d', seq))
  apply(P, now)
  redis.call('PUBLISH', ARGV[5], '1')
else
  redis.call('HDEL', ITEMS, unpack(purged))
  histDrop(QK, purged, true)
end
evFlush(E)
return #moved
