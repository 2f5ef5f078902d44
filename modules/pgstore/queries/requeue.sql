-- Move matching dead letters back to the queue, due now, attempts reset;
-- last_error stays for the record. $1 queue, $2 tenant ('' any), $3 id
-- ('' any), $4 error substring ('' any), $5 now, $6 notification channel.
WITH moved AS (
    UPDATE {work}
    SET state = 'queued', attempts = 0, dead_at = NULL, not_before = NULL,
        due_at = $5, enqueued_at = $5, seq = nextval('{work}_seq')
    WHERE queue = $1 AND state = 'dead'
      AND ($2::text = '' OR tenant = $2) AND ($3::text = '' OR id = $3)
      AND ($4::text = '' OR strpos(last_error, $4) > 0)
    RETURNING tenant
),
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
