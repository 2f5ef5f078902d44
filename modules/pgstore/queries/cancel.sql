-- Cancel one item, locked by cancel_lock.sql: $1 queue, $2 tenant, $3 id,
-- $4 now, $5 reason. A queued, waiting or dead item becomes cancelled;
-- a leased one keeps its lease and is marked (cancelled_at), and its
-- holder's next call settles the cancel. A cancelled item, or a lease
-- already marked, is left as it is.
-- A cancelled item gets its finished_at and, when the queue records
-- events, its cancelled event (a marked lease gets them when it settles).
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
cancelled AS (
    UPDATE {work}
    SET state = CASE WHEN state = 'leased' THEN 'leased' ELSE 'cancelled' END,
        cancelled_at = $4, cancel_reason = $5,
        wait_signal = NULL, wait_since = NULL, wait_until = NULL,
        finished_at = CASE WHEN state = 'leased' THEN NULL ELSE $4::timestamptz END,
        events = events + CASE WHEN state = 'leased' THEN 0 ELSE (SELECT count(*)::integer FROM ret) END
    WHERE queue = $1 AND tenant = $2 AND id = $3 AND state NOT IN ('cancelled', 'completed') AND cancelled_at IS NULL
    RETURNING queue, tenant, id, state, events
),
ev AS (
    SELECT c.queue, c.tenant, c.id, c.events AS n, r.keep, true AS item, 'cancelled' AS kind, $4::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, NULL AS signal, $5::text AS reason, NULL AS run_time_us
    FROM cancelled c, ret r
    WHERE c.state = 'cancelled'
),
{record_events}
SELECT count(*) FROM cancelled
