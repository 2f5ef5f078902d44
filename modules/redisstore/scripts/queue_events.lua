-- Reads a stretch of a queue's event log (history_lib.lua's ELOG).
--
-- KEYS[1] ELOG   KEYS[2] LIFE   ARGV[1] the cursor: the seq of the last
-- event read ('' for none: from the oldest kept)   ARGV[2] how many.
-- Returns {the seq of the log's last event, 1 when events after the
-- cursor were dropped before being read else 0, the entries}.
local last = tonumber(redis.call('HGET', KEYS[2], 'ls') or '0')
-- The log's placeholder (an empty entry at its head) is skipped.
local base = 0
local head = redis.call('LINDEX', KEYS[1], 0)
if head == '' then
  base = 1
  head = redis.call('LINDEX', KEYS[1], 1)
end
local first = last + 1
if head then
  local c = string.find(head, ':', 1, true)
  first = tonumber(string.sub(head, c + 1, c + tonumber(string.sub(head, 1, c - 1))))
end
local from = first
local gap = 0
if ARGV[1] ~= '' then
  from = tonumber(ARGV[1]) + 1
  if from < first then
    gap, from = 1, first
  end
end
local rows = {}
if from <= last then
  rows = redis.call('LRANGE', KEYS[1], base + from - first, base + from - first + tonumber(ARGV[2]) - 1)
end
return {string.format('%d', last), gap, rows}
