-- Settle failed leases as the policy decided, fenced on their tokens:
-- $1 queue, $2..$7 parallel arrays (tenant, id, token, retry, due_at,
-- last_error), $8 now, $9 the notification channel, $10 the failing
-- workers (parallel to $2..$7; '' for an expired lease), $11 the
-- attempts each decision was made on (parallel too). A retried item goes
-- back to the queue at its due time with one more attempt; the others go
-- to the dead letter. Returns one row per settled item. When any item is
-- retried, the statement runs after turns_share.sql in its transaction.
--
-- A row changes only while it is as its decision saw it: its lease holds
-- the token, with no cancel pending, after those attempts, by that worker
-- (an expired lease's '' matches any). Fail first runs the statement on
-- what the lease itself carries, with no lock taken before; when no row
-- matches it locks the lease (lease_lock.sql), decides again on what it
-- read, and runs the statement once more in that transaction
-- (settleLease in lifecycle.go). Reap passes what it read under its
-- locks.
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
settled AS (
    UPDATE {work} w
    SET state            = CASE WHEN f.retry THEN 'queued' ELSE 'dead' END,
        due_at           = CASE WHEN f.retry THEN f.due_at ELSE w.due_at END,
        not_before       = CASE WHEN f.retry THEN f.due_at ELSE w.not_before END,
        dead_at          = CASE WHEN f.retry THEN NULL ELSE $8::timestamptz END,
        attempts         = w.attempts + 1,
        last_error       = f.last_error,
        seq              = nextval('{work}_seq'),
        worker           = NULL,
        lease_expires_at = NULL,
        token            = NULL,
        events           = w.events + (SELECT count(*)::integer FROM ret)
    FROM unnest($2::text[], $3::text[], $4::bigint[], $5::boolean[], $6::timestamptz[], $7::text[], $10::text[], $11::integer[])
         AS f(tenant, id, token, retry, due_at, last_error, worker, attempts)
    WHERE w.queue = $1 AND w.tenant = f.tenant AND w.id = f.id AND w.state = 'leased' AND w.token = f.token
      AND w.cancelled_at IS NULL AND w.attempts = f.attempts AND (f.worker = '' OR coalesce(w.worker, '') = f.worker)
    RETURNING w.tenant, w.id, f.retry, w.due_at, w.attempts, w.last_error, w.events, f.worker
),
-- A failed or dead event each, when the queue records events.
ev AS (
    SELECT $1::text AS queue, s.tenant, s.id, s.events AS n, r.keep, true AS item,
           CASE WHEN s.retry THEN 'failed' ELSE 'dead' END AS kind, $8::timestamptz AS at, s.worker,
           s.attempts AS attempt, NULL AS token, s.last_error AS error, CASE WHEN s.retry THEN s.due_at END AS next_due,
           NULL AS signal, NULL AS reason, NULL AS run_time_us
    FROM settled s, ret r
),
{record_events},
-- A retried item wakes its tenant if it is parked (the transaction took
-- the tenant's turn lock before this statement).
woken AS (
    SELECT $1::text AS queue, tenant, min(due_at) AS due_at FROM settled WHERE retry GROUP BY tenant
),
{wake_turns},
-- A settled lease of a capped tenant that was at its cap (the snapshot
-- still holds the leases settled here) frees it. Leases past their expiry
-- count here: a reaped tenant stopped counting them when they expired,
-- with no wake, so its claimers are woken now.
freed AS (
    SELECT c.tenant
    FROM (SELECT DISTINCT tenant FROM settled) c
    CROSS JOIN LATERAL (
        SELECT o.max_leased FROM {work}_limits o WHERE o.queue = $1 AND o.tenant = c.tenant
        UNION ALL
        SELECT d.max_leased FROM {work}_limits d WHERE d.queue = $1 AND d.tenant = ''
        LIMIT 1
    ) e
    WHERE e.max_leased > 0
      AND (SELECT count(*) FROM {work} w
           WHERE w.queue = $1 AND w.tenant = c.tenant AND w.state = 'leased') >= e.max_leased
),
-- One wake for the queue when anything went back to it or a capped
-- tenant was freed.
notified AS (
    SELECT pg_notify($9, $1)
    FROM (SELECT 1 FROM settled WHERE retry UNION ALL SELECT 1 FROM freed) x
    LIMIT 1
)
SELECT s.tenant, s.id, s.retry, (SELECT count(*) FROM notified) AS woke
FROM settled s
