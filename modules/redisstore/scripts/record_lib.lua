-- Item records (prepended to every script that reads or writes them).
--
-- The record is one string rather than a hash: a claim reads it with one
-- GET (several times cheaper than HGETALL) and returns it untouched; the
-- rarer settles decode, change and re-encode it.
-- s state (q queued, d dead, w waiting, c cancelled, k completed and
-- kept (history_lib.lua); a leased item is q
-- with an entry in LEASE)  a attempts  e last error  nb not-before
-- ea enqueued  da dead at  ds dead seq  m ready member  fn last settle
-- nonce  t tenant  i id  md metadata JSON  p payload  (m last of the
-- fields every record has: Enqueue encodes the rest client-side and the
-- script appends the member)  x the lifecycle extension, present only
-- when one of its fields is set (so a record that never used a
-- lifecycle control keeps the shape earlier releases read).
--
-- The fields, each length-prefixed, in this order (decode and encode
-- spell it out): s a e nb ea da ds fn t i md p m, then x when set.
--
-- The extension's fields, length-prefixed in this order: pr priority
-- (decimal, '' for 0)  sn snoozes  ws the awaited signal  wsi waiting
-- since (ns)  wu waiting until (ns)  rs the resuming signal  rp its
-- payload  rt '1' when the wait timed out  ra resumed at (ns)
-- ca cancelled at (ns; on a leased item, the cancel mark)  cr the reason
-- cu cancelled at (us, the CANCELS score)  uf the uniqueness window (us)
-- fa finished at (us: completed, or became cancelled). xget and xput
-- spell the order out; an older record's extension may end early, its
-- missing fields empty.

-- Turning a number into a string is among the dearest steps of the
-- server's Lua: concatenation formats it as a double, and so does Redis
-- for a number passed to redis.call. The strings scripts make of small
-- numbers are therefore made once and kept: LENP and NUMS are created
-- where the script is loaded, outside any call, so a function library
-- (scripts.go) keeps them from call to call; they hold only what
-- string.format makes of each n, so no call sees anything of another.
local LENP, NUMS
LENP, NUMS = {}, {}

-- intString is string.format(fmt, n), kept in T when n is 0 to 4095.
local function intString(T, fmt, n)
  local s = string.format(fmt, n)
  if n >= 0 and n < 4096 then
    T[n] = s
  end
  return s
end

-- lenp is the length prefix of a field n bytes long ('n:').
local function lenp(n)
  return LENP[n] or intString(LENP, '%d:', n)
end

-- num is integer n as a decimal string, for a count or an offset passed
-- to redis.call.
local function num(n)
  return NUMS[n] or intString(NUMS, '%d', n)
end

-- lp is s length-prefixed.
local function lp(s)
  return lenp(#s) .. s
end

-- lenAt reads the length prefix of the field of v at pos: the length of
-- its value and where the value starts, or nil when there is no prefix
-- there. A prefix of up to three digits (every field but a long payload
-- or metadata) is read from its bytes: one call that makes no string,
-- where cutting the digits out and converting them took three calls,
-- two of them through strtod.
local function lenAt(v, pos)
  local a, b, c, d = string.byte(v, pos, pos + 3)
  if not a or a < 48 or a > 57 then
    return nil
  end
  if b == 58 then
    return a - 48, pos + 2
  end
  if not b or b < 48 or b > 57 then
    return nil
  end
  if c == 58 then
    return a * 10 + b - 528, pos + 3
  end
  if not c or c < 48 or c > 57 then
    return nil
  end
  if d == 58 then
    return a * 100 + b * 10 + c - 5328, pos + 4
  end
  local k = string.find(v, ':', pos, true)
  local n = k and tonumber(string.sub(v, pos, k - 1))
  if not n then
    return nil
  end
  return n, k + 1
end

-- recField reads the length-prefixed field of v at pos: its value and the
-- position after it, or nil (also for a pos of nil, so that a run of
-- reads stops giving values at the first that fails). A prefix of up to
-- three digits is read from its bytes, as recSkip reads it: one call per
-- field, where lenAt and a cut were two.
local function recField(v, pos)
  if not pos then
    return nil
  end
  local a, b, c, d = string.byte(v, pos, pos + 3)
  if not a or a < 48 or a > 57 then
    return nil
  end
  if b == 58 then
    return string.sub(v, pos + 2, pos + a - 47), pos + a - 46
  end
  if b and b >= 48 and b <= 57 then
    if c == 58 then
      local n = a * 10 + b - 528
      return string.sub(v, pos + 3, pos + n + 2), pos + n + 3
    end
    if c and c >= 48 and c <= 57 and d == 58 then
      local n = a * 100 + b * 10 + c - 5328
      return string.sub(v, pos + 4, pos + n + 3), pos + n + 4
    end
  end
  local l, at = lenAt(v, pos)
  if not l then
    return nil
  end
  return string.sub(v, at, at + l - 1), at + l
end

-- decode reads record v into a table of its fields (named as above), or
-- nil when v is empty or not a record. The fields are read into locals
-- and the table made at once, with all its keys: a table filled field
-- by field is grown and rehashed four times on the way, which cost as
-- much as reading the fields.
local function decode(v)
  if not v or v == '' then
    return nil
  end
  local s, a, e, nb, ea, da, ds, fn, t, i, md, p, m, x, pos
  s, pos = recField(v, 1)
  a, pos = recField(v, pos)
  e, pos = recField(v, pos)
  nb, pos = recField(v, pos)
  ea, pos = recField(v, pos)
  da, pos = recField(v, pos)
  ds, pos = recField(v, pos)
  fn, pos = recField(v, pos)
  t, pos = recField(v, pos)
  i, pos = recField(v, pos)
  md, pos = recField(v, pos)
  p, pos = recField(v, pos)
  m, pos = recField(v, pos)
  if not m then
    return nil
  end
  if pos > #v then
    x = ''
  else
    x = recField(v, pos)
    if not x then
      return nil
    end
  end
  return {s = s, a = a, e = e, nb = nb, ea = ea, da = da, ds = ds, fn = fn, t = t, i = i, md = md, p = p, m = m, x = x}
end

-- encode is record r as one string: its fields in the order above, each
-- length-prefixed, the extension only when set. One concatenation makes
-- it, where a table of the parts and table.concat took nearly three
-- times as long.
local function encode(r)
  local s, a, e, nb, ea, da, ds = r.s or '', r.a or '', r.e or '', r.nb or '', r.ea or '', r.da or '', r.ds or ''
  local fn, t, i, md, p, m, x = r.fn or '', r.t or '', r.i or '', r.md or '', r.p or '', r.m or '', r.x or ''
  local v = lenp(#s) .. s .. lenp(#a) .. a .. lenp(#e) .. e .. lenp(#nb) .. nb .. lenp(#ea) .. ea .. lenp(#da) .. da ..
    lenp(#ds) .. ds .. lenp(#fn) .. fn .. lenp(#t) .. t .. lenp(#i) .. i .. lenp(#md) .. md .. lenp(#p) .. p .. lenp(#m) .. m
  if x == '' then
    return v
  end
  return v .. lenp(#x) .. x
end

-- xget returns the extension of r as a table (every field a string; one
-- an older record's shorter extension lacks is empty), read as decode
-- reads a record.
local function xget(r)
  if r.X then
    return r.X
  end
  local v = r.x or ''
  local pr, sn, ws, wsi, wu, rs, rp, rt, ra, ca, cr, cu, uf, fa, pos
  pr, pos = recField(v, 1)
  sn, pos = recField(v, pos)
  ws, pos = recField(v, pos)
  wsi, pos = recField(v, pos)
  wu, pos = recField(v, pos)
  rs, pos = recField(v, pos)
  rp, pos = recField(v, pos)
  rt, pos = recField(v, pos)
  ra, pos = recField(v, pos)
  ca, pos = recField(v, pos)
  cr, pos = recField(v, pos)
  cu, pos = recField(v, pos)
  uf, pos = recField(v, pos)
  fa = recField(v, pos)
  local X = {pr = pr or '', sn = sn or '', ws = ws or '', wsi = wsi or '', wu = wu or '', rs = rs or '', rp = rp or '',
    rt = rt or '', ra = ra or '', ca = ca or '', cr = cr or '', cu = cu or '', uf = uf or '', fa = fa or ''}
  r.X = X
  return X
end

-- xprio is the priority of r ('' for none): the extension's first field
-- ('pr' has led it since extensions were written), read without
-- decoding the other thirteen as xget would (an enqueue of prioritised
-- items did that for every item).
local function xprio(r)
  if r.X then
    return r.X.pr
  end
  local v = r.x
  if not v or v == '' then
    return ''
  end
  local n, at = lenAt(v, 1)
  if not n then
    return ''
  end
  return string.sub(v, at, at + n - 1)
end

-- xput writes X back into r.x ('' when every field is empty), in the
-- extension's order, made as encode makes a record.
local function xput(r, X)
  local pr, sn, ws, wsi, wu, rs, rp = X.pr or '', X.sn or '', X.ws or '', X.wsi or '', X.wu or '', X.rs or '', X.rp or ''
  local rt, ra, ca, cr, cu, uf, fa = X.rt or '', X.ra or '', X.ca or '', X.cr or '', X.cu or '', X.uf or '', X.fa or ''
  local x = lenp(#pr) .. pr .. lenp(#sn) .. sn .. lenp(#ws) .. ws .. lenp(#wsi) .. wsi .. lenp(#wu) .. wu .. lenp(#rs) .. rs ..
    lenp(#rp) .. rp .. lenp(#rt) .. rt .. lenp(#ra) .. ra .. lenp(#ca) .. ca .. lenp(#cr) .. cr .. lenp(#cu) .. cu ..
    lenp(#uf) .. uf .. lenp(#fa) .. fa
  r.X = X
  -- Every field empty (fourteen empty fields): the record carries none.
  r.x = x ~= '0:0:0:0:0:0:0:0:0:0:0:0:0:0:' and x or ''
end

-- recSkip returns the position after the n length-prefixed fields of v
-- that start at pos, or nil when v has fewer: it makes no strings. (It
-- reads the prefixes as lenAt does, inline: a call per field costs as
-- much again.)
local function recSkip(v, pos, n)
  for _ = 1, n do
    local a, b, c, d = string.byte(v, pos, pos + 3)
    if not a or a < 48 or a > 57 then
      return nil
    end
    if b == 58 then
      pos = pos + a - 46
    elseif b and b >= 48 and b <= 57 and c == 58 then
      pos = pos + a * 10 + b - 525
    elseif b and b >= 48 and b <= 57 and c and c >= 48 and c <= 57 and d == 58 then
      pos = pos + a * 100 + b * 10 + c - 5324
    else
      local l, at = lenAt(v, pos)
      if not l then
        return nil
      end
      pos = at + l
    end
  end
  return pos
end

-- recAttempts is the attempts field of record v, without decoding the
-- rest, or nil.
local function recAttempts(v)
  local p = v and recSkip(v, 1, 1)
  return p and recField(v, p)
end

-- recPeek reads, without decoding the whole record v, its attempts,
-- tenant and id: a table {a, t, i}, or nil when decode would give nil.
local function recPeek(v)
  if not v or v == '' then
    return nil
  end
  local p = recSkip(v, 1, 1)
  local a
  if p then
    a, p = recField(v, p)
  end
  p = p and recSkip(v, p, 6)
  local t, i
  if p then
    t, p = recField(v, p)
  end
  if p then
    i, p = recField(v, p)
  end
  -- md, p and m come before the optional extension.
  local x = p and recSkip(v, p, 3)
  if not x or x - 1 > #v then
    return nil
  end
  return {a = a, t = t, i = i, xat = x}
end

-- FINX holds, by finish time and then by a record's extension, the
-- length-prefixed extension recFinish made of it and its uf: the items of
-- one call mostly share theirs (none, or a few alike), so each is
-- rewritten once.
local FINX = {}

-- recFinish is what decode, setting the extension's fa to us and the
-- state to k, xput and encode make of record v (recPeek's pk), and its
-- extension's uf; nil when v is not in the shape it handles (then decode
-- the record instead).
local function recFinish(v, pk, us)
  if string.sub(v, 1, 2) ~= '1:' then
    return nil
  end
  local head = '1:k' .. string.sub(v, 4, pk.xat - 1)
  local x = ''
  if pk.xat <= #v then
    local rest
    x, rest = recField(v, pk.xat)
    if not x or rest <= #v then
      return nil
    end
  end
  local byX = FINX[us]
  if not byX then
    byX = {}
    FINX[us] = byX
  end
  local made = byX[x]
  if made then
    return head .. made[1], made[2]
  end
  -- The extension's first 13 fields as they are (absent ones empty),
  -- then fa.
  local pos, n, uf = 1, 0, ''
  while n < 13 and pos <= #x do
    local f, nxt = recField(x, pos)
    if not f then
      return nil
    end
    n = n + 1
    if n == 13 then
      uf = f
    end
    pos = nxt
  end
  local body = string.sub(x, 1, pos - 1) .. string.rep('0:', 13 - n) .. lenp(#us) .. us
  local tail = lenp(#body) .. body
  byX[x] = {tail, uf}
  return head .. tail, uf
end
