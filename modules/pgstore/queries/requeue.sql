-- Move matching dead letters back to the queue, due now, attempts reset;
-- last_error stays for the record. $1 queue, $2 tenant ('' any), $3 id
-- ('' any), $4 error substring ('' any), $5 now, $6 notification channel,
-- $7 the tenants requeue_lock.sql locked in the statement before: only
-- their dead letters move (one that died since is left for the next
-- requeue).
--
-- The rows are locked first in key order (queue, tenant, id), the order
-- a bulk cancel and a Complete batch lock in, so none of them can wait
-- on another in a cycle whatever index finds the rows.
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
locked AS MATERIALIZED (
    SELECT queue, tenant, id FROM {work}
    WHERE {dead_match} AND tenant = ANY($7::text[])
    ORDER BY queue, tenant, id
    FOR UPDATE
),
moved AS (
    UPDATE {work} w
    SET state = 'queued', attempts = 0, dead_at = NULL, not_before = NULL,
        due_at = $5, enqueued_at = $5, seq = nextval('{work}_seq'),
        events = events + (SELECT count(*)::integer FROM ret)
    FROM locked l
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
    RETURNING w.tenant, w.id, w.events
),
ev AS (
    SELECT $1::text AS queue, m.tenant, m.id, m.events AS n, r.keep, true AS item, 'requeued' AS kind, $5::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, NULL AS signal, NULL AS reason, NULL AS run_time_us
    FROM moved m, ret r
),
{record_events},
-- Their tenants wake now if parked.
woken AS (
    SELECT DISTINCT $1::text AS queue, tenant, $5::timestamptz AS due_at FROM moved
),
{wake_turns},
turns AS (
    INSERT INTO {turns} (queue, tenant)
    SELECT DISTINCT $1, tenant FROM moved
    ORDER BY 2
    ON CONFLICT (queue, tenant) DO NOTHING
),
notified AS (
    SELECT pg_notify($6, $1) FROM moved LIMIT 1
)
SELECT count(*) AS moved, (SELECT count(*) FROM notified) AS woke
FROM moved
