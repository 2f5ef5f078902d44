-- End the waits of a queue that timed out by now: $1 queue, $2 now, $3
-- the tenants wait_timeouts_lock.sql locked in the statement before, $4
-- the notification channel. Each is queued, due when it timed out (its
-- due_at), with a resume that says so. A wait a signal holds locked
-- right now is skipped: the signal resumes it (or, once it commits,
-- finds it timed out and leaves it for the next pass).
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
ended AS (
    SELECT ctid
    FROM {work}
    WHERE queue = $1 AND state = 'waiting' AND due_at <= $2 AND tenant = ANY($3::text[])
    FOR UPDATE SKIP LOCKED
),
moved AS (
    UPDATE {work} w
    SET state = 'queued', not_before = NULL, seq = nextval('{work}_seq'),
        resumed_signal = w.wait_signal, resumed_payload = NULL, resumed_timed_out = true, resumed_at = w.wait_until,
        wait_signal = NULL, wait_since = NULL, wait_until = NULL,
        events = w.events + (SELECT count(*)::integer FROM ret)
    WHERE w.ctid = ANY (ARRAY(SELECT ctid FROM ended)) AND w.queue = $1 AND w.state = 'waiting' AND w.due_at <= $2
    RETURNING w.queue, w.tenant, w.id, w.due_at, w.resumed_signal, w.events
),
ev AS (
    SELECT m.queue, m.tenant, m.id, m.events AS n, r.keep, true AS item, 'timed_out' AS kind, $2::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, m.resumed_signal AS signal, NULL AS reason, NULL AS run_time_us
    FROM moved m, ret r
),
{record_events},
woken AS (
    SELECT queue, tenant, min(due_at) AS due_at FROM moved GROUP BY queue, tenant
),
{wake_turns},
turns AS (
    INSERT INTO {turns} (queue, tenant)
    SELECT DISTINCT queue, tenant FROM moved
    ORDER BY 1, 2
    ON CONFLICT (queue, tenant) DO NOTHING
),
notified AS (
    SELECT pg_notify($4, $1) FROM moved LIMIT 1
)
SELECT count(*), (SELECT count(*) FROM notified) FROM moved
