-- History helpers (retention, events, the finished and ID indexes) for
-- the queue scripts; prepended after queue_lib.lua. The functions take
-- their keys as arguments, so the complete step can pass each group's.
--
-- LIFE fields of history: 'h' '1' while the queue keeps finished items
-- or records events, or once any of its items asked for a uniqueness
-- window ('u' '1'): a script reads the rest of its history state, and a
-- complete reads its records, only then. 'ra' the retention's age (us),
-- 'rc' its count, 're' how many events an item keeps (absent or '0':
-- no events), 'ls' the seq of the queue log's last event.
--
--   FIN   zset  finished items (completed and kept, or cancelled), score 0,
--               member the finish time (us) as 16 hex digits, the tenant,
--               a NUL, the id: newest last in (time, tenant, id) order
--   IDS   zset  every item, score 0, member lp(id) lp(tenant): an id's
--               items are one lex range
--   EVS   hash  ref -> dropped ':' last claim (ns) ':' then its events,
--               each lp(event); 'h'..ref -> its heartbeats
--   ELOG  list  the queue's latest events (QUEUELOG), oldest first, each
--               lp(seq) lp(tenant) lp(id) then the event; its placeholder,
--               an empty entry at its head, goes once the log is full
--
-- An event is lp of each of: kind, at (ns), worker, attempt, token,
-- error, next due (ns), signal, reason, run time (ns).
local QUEUELOG = 10000

local FINH = {}
local function finMember(us, t, i)
  local h = FINH[us] -- a script finishes its items at one time
  if not h then
    h = string.format('%016x', tonumber(us))
    FINH[us] = h
  end
  return h .. t .. '\0' .. i
end

-- idMember turns ref (lp(t) lp(i)) into its IDS member lp(i) lp(t).
local function idMember(ref)
  local c = string.find(ref, ':', 1, true)
  local n = c + tonumber(string.sub(ref, 1, c - 1))
  return string.sub(ref, n + 1) .. string.sub(ref, 1, n)
end

-- histOf is the history state of LIFE's fields h, ra, rc, re: nil when
-- the queue has none, else its retention and events cap.
local function histOf(h, ra, rc, re)
  if h ~= '1' then
    return nil
  end
  local c = {age = tonumber(ra) or 0, count = tonumber(rc) or 0, ev = tonumber(re) or 0}
  c.keeps = c.age > 0 or c.count > 0
  return c
end

-- histCfg reads the queue's history state from its LIFE key life,
-- whether its history placeholders were written, and whether its hot
-- keys hold their long entries (widen in queue_lib.lua).
local function histCfg(life)
  local v = redis.call('HMGET', life, 'h', 'ra', 'rc', 're', 'hp', 'wd')
  return histOf(v[1], v[2], v[3], v[4]), v[5] == '1', v[6] == '1'
end

local function ev(kind, at, f)
  return lp(kind) .. lp(at) .. lp(f.w or '') .. lp(f.a or '') .. lp(f.tok or '') .. lp(f.e or '') ..
    lp(f.nd or '') .. lp(f.sig or '') .. lp(f.why or '') .. lp(f.rt or '')
end

-- newEvents starts the events of one script for a queue's keys
-- (k.life, k.evs, k.elog), or returns nil when cfg records none. now is
-- the events' time (ns).
local function newEvents(cfg, k, now)
  if not cfg or cfg.ev <= 0 then
    return nil
  end
  return {cap = cfg.ev, life = k.life, evs = k.evs, elog = k.elog, now = now, by = {}, order = {}, log = {}, loge = {}, claim = {}, gone = {},
    cur = {}}
end

-- evAdd records event e (from ev) of item ref; gone: the item is being
-- deleted, so the event goes to the queue's log only. (A log row's
-- lp(tenant) lp(id) is the ref itself.)
-- E must be set: callers make e, and call evAdd, only when the queue
-- records events (newEvents returned a table). An event is a dozen
-- string operations and a table, work thrown away on a queue that keeps
-- none (for an enqueue that was a fifth of its server time per item).
local function evAdd(E, ref, e, gone)
  local n = #E.log + 1
  E.log[n], E.loge[n] = ref, e -- joined with the row's seq in evFlush
  if gone then
    E.gone[ref] = true
    return
  end
  local l = E.by[ref]
  if not l then
    l = {}
    E.by[ref] = l
    E.order[#E.order + 1] = ref
  end
  l[#l + 1] = lp(e)
end

-- evValue is an item's EVS value once its new events (new, each lp'd)
-- are appended to its stored value cv (nil for none), with claim (nil to
-- keep the stored one) as its last claim time, capped at E.cap events.
local function evValue(E, cv, claim, new)
  -- A stored event is at least 23 bytes (ten prefixed fields, then its
  -- own prefix), so a body shorter than that many times one more than
  -- the cap holds no more than the cap: the stored value is then kept as
  -- it is, the new events appended and the claim time replaced, without
  -- taking it apart.
  local short = (E.cap + 1) * 23
  local c2
  if cv then
    c2 = select(2, string.find(cv, '^%d+:%d*:'))
  end
  if c2 and #cv - c2 + #new < short then
    if not claim then
      return cv .. new
    end
    local c1 = string.find(cv, ':', 1, true)
    return string.sub(cv, 1, c1) .. claim .. string.sub(cv, c2) .. new
  end
  local dropped, body = 0, ''
  if c2 then
    local d, c, b = string.match(cv, '^(%d+):(%d*):(.*)$')
    dropped, claim, body = tonumber(d), claim or c, b
  end
  body = body .. new
  local starts, pos = {}, #body < short and #body + 1 or 1
  while pos <= #body do
    local c = string.find(body, ':', pos, true)
    starts[#starts + 1] = pos
    pos = c + 1 + tonumber(string.sub(body, pos, c - 1))
  end
  if #starts > E.cap then
    dropped = dropped + #starts - E.cap
    body = string.sub(body, starts[#starts - E.cap + 1])
  end
  return string.format('%d', dropped) .. ':' .. (claim or '') .. ':' .. body
end

-- evFlush writes what evAdd gathered: each item's events, capped, and the
-- queue log, capped.
local function evFlush(E)
  if not E or #E.log == 0 then
    return
  end
  local keep = {}
  for _, ref in ipairs(E.order) do
    if not E.gone[ref] then
      keep[#keep + 1] = ref
    end
  end
  if #keep > 0 then
    -- Values the script already read (E.cur) are not read again.
    local miss = {}
    for _, ref in ipairs(keep) do
      if E.cur[ref] == nil then
        miss[#miss + 1] = ref
      end
    end
    if #miss > 0 then
      local got = redis.call('HMGET', E.evs, unpack(miss))
      for k, ref in ipairs(miss) do
        E.cur[ref] = got[k]
      end
    end
    local set = {}
    for _, ref in ipairs(keep) do
      local evs = E.by[ref]
      set[#set + 1] = ref
      set[#set + 1] = evValue(E, E.cur[ref], E.claim[ref], #evs == 1 and evs[1] or table.concat(evs))
    end
    redis.call('HSET', E.evs, unpack(set))
  end
  local last = redis.call('HINCRBY', E.life, 'ls', #E.log)
  local first = last - #E.log
  local rows = {}
  -- The rows' seqs run on from first + 1: each ten of them shares its
  -- digits but the last, so a seq is formatted once per ten (a format
  -- takes as long as the rest of the row).
  local tens, tensOf
  local loge = E.loge
  for j, ref in ipairs(E.log) do
    local n = first + j
    local d = n % 10
    local t = (n - d) / 10
    if t ~= tensOf then
      tensOf, tens = t, t > 0 and string.format('%d', t) or ''
    end
    local sq = tens .. string.char(48 + d)
    rows[j] = lenp(#sq) .. sq .. ref .. loge[j]
  end
  local n = redis.call('RPUSH', E.elog, unpack(rows))
  if n > QUEUELOG then
    redis.call('LTRIM', E.elog, n - QUEUELOG, -1)
  end
end

-- nsSince is now - at, both decimal ns, as a decimal string (split at
-- the microsecond, so that no double holds a count of ns).
local function nsSince(now, at)
  local function us(v)
    if #v <= 3 then
      return 0, tonumber(v)
    end
    return tonumber(string.sub(v, 1, #v - 3)), tonumber(string.sub(v, -3))
  end
  local nu, nr = us(now)
  local au, ar = us(at)
  return string.format('%d', (nu - au) * 1000 + nr - ar)
end

-- claimedAt is the time (ns) of the last claim the events of ref (its
-- EVS value v) record, or nil.
local function claimedAt(v)
  local c = v and string.match(v, '^%d+:(%d+):')
  return c
end

-- histDrop removes the history of refs being deleted (their IDS members,
-- events and heartbeats) from the keys k (k.ids, k.evs). idOf, when
-- given, holds each ref's IDS member, made by the caller.
local function histDrop(k, refs, evs, idOf)
  if #refs == 0 then
    return
  end
  local ids = {}
  for j, ref in ipairs(refs) do
    ids[j] = idOf and idOf[ref] or idMember(ref)
  end
  redis.call('ZREM', k.ids, unpack(ids))
  if evs then
    local f = {}
    for _, ref in ipairs(refs) do
      f[#f + 1] = ref
      f[#f + 1] = 'h' .. ref
    end
    redis.call('HDEL', k.evs, unpack(f))
  end
end

-- histPlaceholders writes the placeholders of the history keys (see the
-- prelude), ELOG's an empty entry at its head while it has none, and
-- LIFE's 'hp', which says they were written: a queue an earlier release
-- created gets them from its next enqueue, so that no declared key of the
-- queue is missing while its slot migrates.
local function histPlaceholders(k)
  redis.call('ZADD', k.fin, 'NX', 0, '')
  redis.call('ZADD', k.ids, 'NX', 0, '')
  redis.call('HSETNX', k.evs, '', '')
  if redis.call('EXISTS', k.elog) == 0 then
    redis.call('RPUSH', k.elog, '')
  end
  redis.call('HSET', k.life, 'hp', '1')
end

-- finishedUs is when a finished record r finished (us): its 'fa', or for
-- a cancelled record of an earlier release the cancel's time.
local function finishedUs(r)
  local X = xget(r)
  if X.fa ~= '' then
    return X.fa
  end
  return X.cu
end

-- QK are the history keys of a queue script's queue (KEYS as
-- queue_lib.lua names them; nil in the complete script, whose keys come
-- in groups).
local QK = {life = KEYS[23], fin = KEYS[28], ids = KEYS[29], evs = KEYS[30], elog = KEYS[31]}
