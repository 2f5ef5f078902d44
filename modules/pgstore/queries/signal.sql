-- Resume a wait with a signal, in the statement after turns_share.sql:
-- $1 queue, $2 tenant, $3 id, $4 signal, $5 payload, $6 now, $7 the
-- notification channel. The check and the write are one UPDATE: of two
-- concurrent signals the second waits for the first's row lock, then
-- finds the row no longer waiting, so a wait is resumed exactly once.
-- The item is due now. Returns (true, ...) when it resumed the wait,
-- else (false, the item's state, the signal it waits for, its timeout);
-- no row: the item is unknown.
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
resumed AS (
    UPDATE {work}
    SET state = 'queued', due_at = $6, not_before = NULL, seq = nextval('{work}_seq'),
        resumed_signal = wait_signal, resumed_payload = $5, resumed_timed_out = false, resumed_at = $6,
        wait_signal = NULL, wait_since = NULL, wait_until = NULL,
        events = events + (SELECT count(*)::integer FROM ret)
    WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'waiting' AND wait_signal = $4 AND wait_until > $6
    RETURNING queue, tenant, id, due_at, events
),
ev AS (
    SELECT s.queue, s.tenant, s.id, s.events AS n, r.keep, true AS item, 'signalled' AS kind, $6::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, $4::text AS signal, NULL AS reason, NULL AS run_time_us
    FROM resumed s, ret r
),
{record_events},
woken AS (
    SELECT queue, tenant, due_at FROM resumed
),
{wake_turns},
turns AS (
    INSERT INTO {turns} (queue, tenant)
    SELECT queue, tenant FROM resumed
    ON CONFLICT (queue, tenant) DO NOTHING
),
notified AS (
    SELECT pg_notify($7, $1) FROM resumed
)
SELECT true AS resumed, '' AS state, NULL::text AS wait_signal, NULL::timestamptz AS wait_until, (SELECT count(*) FROM notified) AS woke
FROM resumed
UNION ALL
SELECT false, w.state, w.wait_signal, w.wait_until, 0
FROM {work} w
WHERE w.queue = $1 AND w.tenant = $2 AND w.id = $3 AND NOT EXISTS (SELECT 1 FROM resumed)
