-- Enqueue a batch, in the statement after turns_share.sql. $1..$7 are
-- parallel arrays (queue, tenant, id, payload, metadata as JSON text,
-- not_before, due_at), $8 now, $9 the notification channel, $10 the
-- items' priorities (parallel to $1..$7).
--
-- seq is drawn in the order given, so a tenant's items are served in that
-- order; the rows are then inserted in key order, so two batches that
-- share keys take their locks in the same order and cannot deadlock. An ID
-- already queued, leased, waiting, dead or cancelled is left as it is. The NOTIFY rides the
-- same transaction: a bound enqueue wakes claimers only when the caller
-- commits.
WITH input AS (
    SELECT i.*, nextval('{work}_seq') AS seq
    FROM (
        SELECT *
        FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::timestamptz[], $7::timestamptz[], $10::integer[])
             WITH ORDINALITY AS i(queue, tenant, id, payload, metadata, not_before, due_at, priority, ord)
        ORDER BY ord
    ) i
),
ins AS (
    INSERT INTO {work} (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, enqueued_at, priority)
    SELECT queue, tenant, id, 'queued', seq, due_at, not_before, payload, metadata::jsonb, $8, priority
    FROM input
    ORDER BY queue, tenant, id
    ON CONFLICT (queue, tenant, id) DO NOTHING
    RETURNING queue
),
-- Every tenant gets its turn row. The transaction took the shared side of
-- each tenant's turn lock in the statement before this one
-- (turns_share.sql): Reap prunes the turn rows of drained tenants under
-- the exclusive side, so it never removes a row while an enqueue for
-- that tenant is in flight, and an enqueue that waited behind a prune
-- inserts the row afresh.
-- A new tenant joins the rotation at the back: its turn batch is drawn
-- after those of every tenant served so far.
turns AS (
    INSERT INTO {turns} (queue, tenant, turn_batch)
    SELECT d.queue, d.tenant, nextval('{turns}_seq')
    FROM (SELECT DISTINCT queue, tenant FROM input) d
    WHERE NOT EXISTS (SELECT 1 FROM {turns} t WHERE t.queue = d.queue AND t.tenant = d.tenant)
    ORDER BY d.queue, d.tenant
    ON CONFLICT (queue, tenant) DO NOTHING
),
-- A parked tenant wakes at its earliest new item.
woken AS (
    SELECT queue, tenant, min(due_at) AS due_at FROM input GROUP BY queue, tenant
),
{wake_turns}
SELECT pg_notify($9, q.queue)
FROM (SELECT DISTINCT queue FROM ins) q
