-- Completes the leases from ARGV[11] on (grouped by queue,
-- as complete reads them), then claims as claim does with ARGV[1..10];
-- max 0 only completes. One call instead of two is the point: a worker
-- loop spends most of its time in round trips.
--
-- A retry after a lost reply carries the same nonce. The claim half then
-- replays its own memo; the complete half must not run again, or leases
-- it completed the first time would come back as lost. So the positions
-- it found lost are kept by nonce next to the claim memos (and leave with
-- them, through the claim log) and a retry returns them instead.
-- Returns {lost positions, {token, record, record, ...}}.
local key = 'done:' .. ARGV[10]
local lost
if #ARGV > 10 then
  local seen = recall(key)
  if seen then
    lost = {}
    for p in string.gmatch(seen, '%d+') do
      lost[#lost + 1] = tonumber(p)
    end
  else
    lost = complete(11)
    remember(key, table.concat(lost, ','))
  end
else
  lost = {}
end
if tonumber(ARGV[8]) == 0 then
  return {lost, {}}
end
return {lost, claim()}
