-- Enqueue a batch, in the statement after turns_share.sql. $1..$7 are
-- parallel arrays (queue, tenant, id, payload, metadata as JSON text,
-- not_before, due_at), $8 now, $9 the notification channel, $10 the
-- items' priorities and $11 their uniqueness windows in microseconds
-- (parallel to $1..$7), $12 whether to report the state a duplicate was
-- found in. Returns one row per item given: whether it was added, and
-- for a duplicate (when $12) the state and window end it was found with.
--
-- seq is drawn in the order given, so a tenant's items are served in that
-- order; the rows are then inserted in key order, so two batches that
-- share keys take their locks in the same order and cannot deadlock. An ID
-- already queued, leased, waiting, dead or cancelled, or completed within
-- its uniqueness window, is left as it is; a completed item past its
-- window (or without one) is replaced by the new item, a new life whose
-- old events go. The NOTIFY rides the
-- same transaction: a bound enqueue wakes claimers only when the caller
-- commits.
WITH input AS (
    SELECT i.*, nextval('{work}_seq') AS seq
    FROM (
        SELECT *
        FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::timestamptz[], $7::timestamptz[], $10::integer[], $11::bigint[])
             WITH ORDINALITY AS i(queue, tenant, id, payload, metadata, not_before, due_at, priority, unique_for_us, ord)
        ORDER BY ord
    ) i
),
-- History (schema version 4): the queues of the batch that record
-- events, one probe of the retention's primary key each.
ret AS (
    SELECT r.queue, r.events AS keep FROM {work}_retention r
    WHERE r.queue = ANY ($1::text[]) AND r.events > 0
),
ins AS (
    INSERT INTO {work} AS w (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, enqueued_at, priority, unique_for_us, events)
    SELECT i.queue, i.tenant, i.id, 'queued', i.seq, i.due_at, i.not_before, i.payload, i.metadata::jsonb, $8, i.priority, i.unique_for_us,
           CASE WHEN EXISTS (SELECT 1 FROM ret r WHERE r.queue = i.queue) THEN 1 ELSE 0 END
    FROM input i
    ORDER BY i.queue, i.tenant, i.id
    ON CONFLICT (queue, tenant, id) DO UPDATE
    SET state = 'queued', seq = EXCLUDED.seq, due_at = EXCLUDED.due_at, not_before = EXCLUDED.not_before, payload = EXCLUDED.payload,
        metadata = EXCLUDED.metadata, enqueued_at = EXCLUDED.enqueued_at, priority = EXCLUDED.priority,
        unique_for_us = EXCLUDED.unique_for_us, events = EXCLUDED.events,
        attempts = 0, last_error = '', dead_at = NULL, worker = NULL, lease_expires_at = NULL, token = NULL, snoozes = 0,
        wait_signal = NULL, wait_since = NULL, wait_until = NULL, resumed_signal = NULL, resumed_payload = NULL,
        resumed_timed_out = NULL, resumed_at = NULL, cancelled_at = NULL, cancel_reason = NULL,
        finished_at = NULL, unique_until = NULL, claimed_at = NULL, heartbeats = 0
    WHERE w.state = 'completed' AND (w.unique_until IS NULL OR w.unique_until <= $8)
    RETURNING w.queue, w.tenant, w.id, w.events, w.not_before, (w.xmax <> 0) AS replaced
),
-- A replaced item's old events go; the new life starts at event 1.
old_events AS (
    DELETE FROM {work}_events x
    USING ins i
    WHERE i.replaced AND x.queue = i.queue AND x.tenant = i.tenant AND x.id = i.id
),
ev AS (
    SELECT i.queue, i.tenant, i.id, 1 AS n, r.keep, true AS item, 'enqueued' AS kind, $8::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, i.not_before AS next_due, NULL AS signal, NULL AS reason, NULL AS run_time_us
    FROM ins i JOIN ret r ON r.queue = i.queue
),
{record_events},
-- Each tenant of the batch with its earliest new item: a parked tenant
-- wakes at it, and a new one joins parked until it when it is ahead.
woken AS (
    SELECT queue, tenant, min(due_at) AS due_at FROM input GROUP BY queue, tenant
),
-- Every tenant gets its turn row. The transaction took the shared side of
-- each tenant's turn lock in the statement before this one
-- (turns_share.sql): Reap prunes the turn rows of drained tenants under
-- the exclusive side, so it never removes a row while an enqueue for
-- that tenant is in flight, and an enqueue that waited behind a prune
-- inserts the row afresh.
-- A new tenant joins the rotation at the back: its turn batch is drawn
-- after those of every tenant served so far. When none of its items is
-- due yet it starts parked until the earliest is, as a park pass would
-- leave it, so a tenant whose items are all delayed costs claims nothing
-- until then (born '-infinity', due at once, every claim probed it until
-- a park pass came).
-- A row another enqueue inserted after this statement's snapshot is not
-- seen by wake_turns below; the insert meets it instead (ON CONFLICT
-- reads the latest row, waiting for that enqueue to commit) and wakes it.
turns AS (
    INSERT INTO {turns} AS t (queue, tenant, turn_batch, wake_at)
    SELECT d.queue, d.tenant, nextval('{turns}_seq'), CASE WHEN d.due_at > $8 THEN d.due_at ELSE '-infinity' END
    FROM woken d
    WHERE NOT EXISTS (SELECT 1 FROM {turns} t WHERE t.queue = d.queue AND t.tenant = d.tenant)
    ORDER BY d.queue, d.tenant
    ON CONFLICT (queue, tenant) DO UPDATE SET wake_at = EXCLUDED.wake_at WHERE t.wake_at > EXCLUDED.wake_at
),
{wake_turns},
notified AS (
    SELECT pg_notify($9, q.queue) FROM (SELECT DISTINCT queue FROM ins) q
)
SELECT i.ord, n.id IS NOT NULL AS added, x.state, x.unique_until, (SELECT count(*) FROM notified) AS woke
FROM input i
LEFT JOIN ins n ON n.queue = i.queue AND n.tenant = i.tenant AND n.id = i.id
LEFT JOIN LATERAL (
    SELECT w.state, w.unique_until FROM {work} w
    WHERE $12::boolean AND n.id IS NULL AND w.queue = i.queue AND w.tenant = i.tenant AND w.id = i.id
) x ON true
