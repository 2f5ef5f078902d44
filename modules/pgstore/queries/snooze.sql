-- Snooze a lease: $1 queue, $2 tenant, $3 id, $4 token, $5 retry (else
-- the snoozes reached the policy's cap), $6 due time, $7 not_before (the
-- time the snooze asked for), $8 now, $9 the notification channel, $10
-- last_error of a dead letter, $11 the worker that holds the lease, $12
-- the snoozes the decision was made on. A retried item goes back to the
-- queue with one more snooze and no attempt charged (the statement then
-- runs after turns_share.sql); the other goes to the dead letter.
-- Claimers are woken when it is due at once.
--
-- The row changes only while it is as the decision saw it: its lease
-- holds the token, with no cancel pending, by worker $11, after $12
-- snoozes. Snooze first runs the statement with what the lease itself
-- carries, with no lock taken before (one round trip); when no row
-- matches (the lease was lost or marked, or the caller's lease is stale)
-- it locks the lease (lease_lock.sql), decides again on what it read and
-- runs the statement once more, in that transaction (settleLease in
-- lifecycle.go).
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
snoozed AS (
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
        token            = NULL,
        events = w.events + (SELECT count(*)::integer FROM ret)
    WHERE w.queue = $1 AND w.tenant = $2 AND w.id = $3 AND w.state = 'leased' AND w.token = $4
      AND w.cancelled_at IS NULL AND coalesce(w.worker, '') = $11::text AND w.snoozes = $12::integer
    RETURNING w.queue, w.tenant, w.id, w.due_at, w.not_before, w.attempts, w.last_error, w.events
),
-- A snoozed (or dead) event, when the queue records events; $11 is the
-- worker that held the lease.
ev AS (
    SELECT s.queue, s.tenant, s.id, s.events AS n, r.keep, true AS item,
           CASE WHEN $5::boolean THEN 'snoozed' ELSE 'dead' END AS kind, $8::timestamptz AS at, $11::text AS worker,
           CASE WHEN $5::boolean THEN NULL ELSE s.attempts + 1 END AS attempt, NULL AS token,
           CASE WHEN $5::boolean THEN NULL ELSE s.last_error END AS error, CASE WHEN $5::boolean THEN s.due_at END AS next_due,
           NULL AS signal, NULL AS reason, NULL AS run_time_us
    FROM snoozed s, ret r
),
{record_events},
woken AS (
    SELECT queue, tenant, due_at FROM snoozed WHERE $5::boolean
),
{wake_turns},
notified AS (
    SELECT pg_notify($9, $1) FROM snoozed WHERE $5::boolean AND due_at <= $8::timestamptz
)
SELECT count(*), (SELECT count(*) FROM notified) FROM snoozed
