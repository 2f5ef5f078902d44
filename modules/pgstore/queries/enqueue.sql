-- Enqueue a batch, in the statement after turns_share.sql. $1..$7 are
-- parallel arrays (queue, tenant, id, payload, metadata as JSON text,
-- not_before, due_at), $8 now, $9 the notification channel.
--
-- seq is drawn in the order given, so a tenant's items are served in that
-- order; the rows are then inserted in key order, so two batches that
-- share keys take their locks in the same order and cannot deadlock. An ID
-- already queued, leased or dead is left as it is. The NOTIFY rides the
-- same transaction: a bound enqueue wakes claimers only when the caller
-- commits.
WITH input AS (
    SELECT i.*, nextval('{work}_seq') AS seq
    FROM (
        SELECT *
        FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::timestamptz[], $7::timestamptz[])
             WITH ORDINALITY AS i(queue, tenant, id, payload, metadata, not_before, due_at, ord)
        ORDER BY ord
    ) i
),
ins AS (
    INSERT INTO {work} (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, enqueued_at)
    SELECT queue, tenant, id, 'queued', seq, due_at, not_before, payload, metadata::jsonb, $8
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
turns AS (
    INSERT INTO {turns} (queue, tenant)
    SELECT DISTINCT queue, tenant FROM input
    ORDER BY queue, tenant
    ON CONFLICT (queue, tenant) DO NOTHING
),
-- A parked tenant wakes at its earliest new item.
woken AS (
    SELECT queue, tenant, min(due_at) AS due_at FROM input GROUP BY queue, tenant
),
{wake_turns}
SELECT pg_notify($9, q.queue)
FROM (SELECT DISTINCT queue FROM ins) q
