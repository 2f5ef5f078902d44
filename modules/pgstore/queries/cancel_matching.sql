-- Cancel every item a filter selects, as cancel.sql cancels one, in one
-- statement: the parameters of fragments/cancel_match.sql ($1..$4), $5 now, $6
-- reason. No row outside the filter is touched.
-- Returns how many items it cancelled or marked.
--
-- The rows are locked first, in key order (queue, tenant, id) whatever
-- index finds them: that is the order Complete locks a batch in, so a
-- bulk cancel and the settles running beside it never wait on each other
-- in a cycle (locked in scan order, the ready index's order, they could
-- deadlock and the server would abort one). A row changed before it is
-- locked is checked against the filter again.
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
locked AS MATERIALIZED (
    SELECT queue, tenant, id FROM {work}
    WHERE {cancel_match}
    ORDER BY queue, tenant, id
    FOR UPDATE
),
cancelled AS (
    UPDATE {work} w
    SET state = CASE WHEN state = 'leased' THEN 'leased' ELSE 'cancelled' END,
        cancelled_at = $5, cancel_reason = $6,
        wait_signal = NULL, wait_since = NULL, wait_until = NULL,
        finished_at = CASE WHEN state = 'leased' THEN NULL ELSE $5::timestamptz END,
        events = events + CASE WHEN state = 'leased' THEN 0 ELSE (SELECT count(*)::integer FROM ret) END
    FROM locked l
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
    RETURNING w.queue, w.tenant, w.id, w.state, w.events
),
ev AS (
    SELECT c.queue, c.tenant, c.id, c.events AS n, r.keep, true AS item, 'cancelled' AS kind, $5::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, NULL AS signal, $6::text AS reason, NULL AS run_time_us
    FROM cancelled c, ret r
    WHERE c.state = 'cancelled'
),
{record_events}
SELECT count(*) FROM cancelled
