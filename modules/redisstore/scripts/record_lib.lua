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
local RECORD = {'s', 'a', 'e', 'nb', 'ea', 'da', 'ds', 'fn', 't', 'i', 'md', 'p', 'm', 'x'}

-- The extension's fields, length-prefixed in this order: pr priority
-- (decimal, '' for 0)  sn snoozes  ws the awaited signal  wsi waiting
-- since (ns)  wu waiting until (ns)  rs the resuming signal  rp its
-- payload  rt '1' when the wait timed out  ra resumed at (ns)
-- ca cancelled at (ns; on a leased item, the cancel mark)  cr the reason
-- cu cancelled at (us, the CANCELS score)  uf the uniqueness window (us)
-- fa finished at (us: completed, or became cancelled)
local EXT = {'pr', 'sn', 'ws', 'wsi', 'wu', 'rs', 'rp', 'rt', 'ra', 'ca', 'cr', 'cu', 'uf', 'fa'}

local function decode(v)
  if not v or v == '' then
    return nil
  end
  local r, pos = {}, 1
  for _, f in ipairs(RECORD) do
    local c = string.find(v, ':', pos, true)
    if not c then
      if f == 'x' then
        r.x = ''
        return r
      end
      return nil
    end
    local n = tonumber(string.sub(v, pos, c - 1))
    if not n then
      return nil
    end
    r[f] = string.sub(v, c + 1, c + n)
    pos = c + n + 1
  end
  return r
end

local function encode(r)
  local parts = {}
  for k, f in ipairs(RECORD) do
    local v = r[f] or ''
    if f ~= 'x' or v ~= '' then
      parts[k] = #v .. ':' .. v
    end
  end
  return table.concat(parts)
end

-- xget returns the extension of r as a table (every field a string).
local function xget(r)
  if r.X then
    return r.X
  end
  local X, v, pos = {}, r.x or '', 1
  for _, f in ipairs(EXT) do
    local c = v ~= '' and string.find(v, ':', pos, true)
    if c then
      local n = tonumber(string.sub(v, pos, c - 1))
      X[f] = string.sub(v, c + 1, c + n)
      pos = c + n + 1
    else
      X[f] = ''
    end
  end
  r.X = X
  return X
end

-- xput writes X back into r.x ('' when every field is empty).
local function xput(r, X)
  local parts, any = {}, false
  for k, f in ipairs(EXT) do
    local v = X[f] or ''
    any = any or v ~= ''
    parts[k] = #v .. ':' .. v
  end
  r.X = X
  r.x = any and table.concat(parts) or ''
end
