-- Adds usage to one tenant's budget slots, in the slot of now of the
-- tenant's effective budget (its own limits, else the queue's default).
-- Usage charged while no budget applies to the tenant is not kept: there
-- is no window to count it in. Slots that left the window are dropped,
-- and so are slots kept in another width (a new window starts afresh).
--
-- ARGV[1] lp(tenant)   ARGV[2] cost micros   ARGV[3] tokens   ARGV[4] now (unix ms)
-- Returns 1 when the usage was kept, 0 when no budget applies.
local lt = ARGV[1]
local L = limitsOf(LIMITS, {lt})[1]
if not L or not L.width then
  return 0
end
local s = budgetSlot(L, tonumber(ARGV[4]))
local f = 'b' .. lt
local slots = budgetSlots(redis.call('HGET', FSTATE, f), L.width)
local holder = redis.call('HEXISTS', FSTATE, '') == 1
local e = slots[s]
if not e then
  e = {0, 0}
  slots[s] = e
end
e[1] = e[1] + tonumber(ARGV[2])
e[2] = e[2] + tonumber(ARGV[3])

-- Writes from here on.
if not holder then
  redis.call('HSET', FSTATE, '', WIDE)
end
redis.call('HSET', FSTATE, f, budgetEncode(slots, L.width, s))
return 1
