-- Cancel one item, locked by cancel_lock.sql: $1 queue, $2 tenant, $3 id,
-- $4 now, $5 reason. A queued, waiting or dead item becomes cancelled;
-- a leased one keeps its lease and is marked (cancelled_at), and its
-- holder's next call settles the cancel. A cancelled item, or a lease
-- already marked, is left as it is.
UPDATE {work}
SET state = CASE WHEN state = 'leased' THEN 'leased' ELSE 'cancelled' END,
    cancelled_at = $4, cancel_reason = $5,
    wait_signal = NULL, wait_since = NULL, wait_until = NULL
WHERE queue = $1 AND tenant = $2 AND id = $3 AND state <> 'cancelled' AND cancelled_at IS NULL
