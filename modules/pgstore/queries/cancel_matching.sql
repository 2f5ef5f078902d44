-- Cancel every item a filter selects, as cancel.sql cancels one, in one
-- statement: the parameters of fragments/cancel_match.sql ($1..$4), $5 now, $6
-- reason. No row outside the filter is touched.
-- Returns how many items it cancelled or marked.
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
cancelled AS (
    UPDATE {work}
    SET state = CASE WHEN state = 'leased' THEN 'leased' ELSE 'cancelled' END,
        cancelled_at = $5, cancel_reason = $6,
        wait_signal = NULL, wait_since = NULL, wait_until = NULL,
        finished_at = CASE WHEN state = 'leased' THEN NULL ELSE $5::timestamptz END,
        events = events + CASE WHEN state = 'leased' THEN 0 ELSE (SELECT count(*)::integer FROM ret) END
    WHERE {cancel_match}
    RETURNING queue, tenant, id, state, events
),
ev AS (
    SELECT c.queue, c.tenant, c.id, c.events AS n, r.keep, true AS item, 'cancelled' AS kind, $5::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, NULL AS signal, $6::text AS reason, NULL AS run_time_us
    FROM cancelled c, ret r
    WHERE c.state = 'cancelled'
),
{record_events}
SELECT count(*) FROM cancelled
