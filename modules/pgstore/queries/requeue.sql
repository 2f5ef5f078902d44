-- Move matching dead letters back to the queue, due now, attempts reset;
-- last_error stays for the record. $1 queue, $2 tenant ('' any), $3 id
-- ('' any), $4 error substring ('' any), $5 now, $6 notification channel,
-- $7 the tenants requeue_lock.sql locked in the statement before: only
-- their dead letters move (one that died since is left for the next
-- requeue).
WITH moved AS (
    UPDATE {work}
    SET state = 'queued', attempts = 0, dead_at = NULL, not_before = NULL,
        due_at = $5, enqueued_at = $5, seq = nextval('{work}_seq')
    WHERE {dead_match} AND tenant = ANY($7::text[])
    RETURNING tenant
),
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
