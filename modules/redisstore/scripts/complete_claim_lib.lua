-- completeClaim completes the leases from ARGV[11] on (grouped by queue, with their keys
-- from KEYS[32] on, as complete reads them), then claims as claim does
-- with ARGV[1..10] and KEYS[1..31]; max 0 only completes. One call instead
-- of two is the point: a worker loop spends most of its time in round
-- trips.
--
-- A retry after a lost reply carries the same nonce. The claim half then
-- replays its own memo; the complete half must not run again, or leases
-- it completed the first time would come back as lost. So the positions
-- it found lost are kept by nonce next to the claim memos (and leave with
-- them, through the claim log) and a retry returns them instead.
-- Returns {lost positions, {token, record, record, ...}}.
-- Both halves read before either writes; the claim counts the live leases
-- of its own queue that the complete half ends as ended already.
local function completeClaim()
  local key = 'done:' .. ARGV[9]
  local lost, drops = {}, nil
  if #ARGV > 10 then
    local seen = recall(key)
    if seen then
      for p in string.gmatch(seen, '%-?%d+') do
        lost[#lost + 1] = tonumber(p)
      end
    else
      lost, drops = completeRead(11, 32)
    end
  end
  local freed -- the refs of this queue the complete half ends
  for _, d in ipairs(drops or {}) do
    if KEYS[d[1]] == ITEMS then
      freed = d[2]
    end
  end
  local c = tonumber(ARGV[7]) ~= 0 and claimRead(freed)
  if drops then
    completeWrite(drops)
    remember(key, table.concat(lost, ','))
  end
  if not c then
    return {lost, {}}
  end
  return {lost, claimWrite(c)}
end
