-- Lock a lease that still holds its token, before a Fail, Snooze or
-- Wait: $1 queue, $2 tenant, $3 id, $4 token. No row: the lease was
-- lost. marked: its cancel is pending, so the call settles the cancel
-- instead (cancel_settle.sql).
SELECT attempts, snoozes, cancelled_at IS NOT NULL AS marked, coalesce(worker, '') AS worker
FROM {work}
WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'leased' AND token = $4
FOR UPDATE
