-- Snooze a lease locked by lease_lock.sql: $1 queue, $2 tenant, $3 id,
-- $4 token, $5 retry (else the snoozes reached the policy's cap), $6 due
-- time, $7 not_before (the time the snooze asked for), $8 now, $9 the
-- notification channel, $10 last_error of a dead letter. A retried item
-- goes back to the queue with one more snooze and no attempt charged
-- (the statement then runs after turns_share.sql); the other goes to the
-- dead letter. Claimers are woken when it is due at once.
WITH snoozed AS (
    UPDATE {work} w
    SET state            = CASE WHEN $5::boolean THEN 'queued' ELSE 'dead' END,
        due_at           = CASE WHEN $5::boolean THEN $6::timestamptz ELSE w.due_at END,
        not_before       = CASE WHEN $5::boolean THEN $7::timestamptz ELSE w.not_before END,
        snoozes          = CASE WHEN $5::boolean THEN w.snoozes + 1 ELSE w.snoozes END,
        dead_at          = CASE WHEN $5::boolean THEN NULL ELSE $8::timestamptz END,
        last_error       = CASE WHEN $5::boolean THEN w.last_error ELSE $10::text END,
        seq              = nextval('{work}_seq'),
        worker           = NULL,
        lease_expires_at = NULL,
        token            = NULL
    WHERE w.queue = $1 AND w.tenant = $2 AND w.id = $3 AND w.state = 'leased' AND w.token = $4
    RETURNING w.queue, w.tenant, w.due_at
),
woken AS (
    SELECT queue, tenant, due_at FROM snoozed WHERE $5::boolean
),
{wake_turns},
notified AS (
    SELECT pg_notify($9, $1) FROM snoozed WHERE $5::boolean AND due_at <= $8::timestamptz
)
SELECT count(*), (SELECT count(*) FROM notified) FROM snoozed
