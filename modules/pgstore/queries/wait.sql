-- Park a lease until a signal or its timeout: $1 queue, $2 tenant, $3
-- id, $4 token, $5 signal, $6 now, $7 timeout, $8 the worker that holds
-- the lease. The lease ends and no attempt is charged. due_at becomes the
-- timeout: a claim that finds a wait of its queue due runs
-- wait_timeouts.sql. The row changes only while its lease holds the
-- token, with no cancel pending, by worker $8: Wait runs the statement
-- first with no lock taken, and when no row matches, after
-- lease_lock.sql (see settleLease in lifecycle.go).
WITH ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
waited AS (
    UPDATE {work}
    SET state = 'waiting', wait_signal = $5, wait_since = $6, wait_until = $7, due_at = $7,
        seq = nextval('{work}_seq'), worker = NULL, lease_expires_at = NULL, token = NULL,
        events = events + (SELECT count(*)::integer FROM ret)
    WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'leased' AND token = $4
      AND cancelled_at IS NULL AND coalesce(worker, '') = $8::text
    RETURNING queue, tenant, id, events
),
-- A waiting event, when the queue records events.
ev AS (
    SELECT w.queue, w.tenant, w.id, w.events AS n, r.keep, true AS item, 'waiting' AS kind, $6::timestamptz AS at, $8::text AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, $7::timestamptz AS next_due, $5::text AS signal, NULL AS reason, NULL AS run_time_us
    FROM waited w, ret r
),
{record_events}
SELECT count(*) FROM waited
