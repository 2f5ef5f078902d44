-- Enqueue a batch in one statement. $1..$7 are parallel arrays (queue,
-- tenant, id, payload, metadata as JSON text, not_before, due_at), $8 now,
-- $9 the notification channel.
--
-- seq is drawn in the order given, so a tenant's items are served in that
-- order; the rows are then inserted in key order, so two batches that
-- share keys take their locks in the same order and cannot deadlock. An ID
-- already queued, leased or dead is left as it is. Every tenant gets its
-- turn row. The NOTIFY rides the same transaction: a bound enqueue wakes
-- claimers only when the caller commits.
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
-- A shared advisory lock per tenant, taken before its turn row is looked
-- for: Reap prunes the turn rows of drained tenants under the exclusive
-- lock, so it never removes a row while an enqueue for that tenant is in
-- flight, and an enqueue waiting behind a prune inserts the row afresh.
-- Shared locks never wait for each other.
locked AS MATERIALIZED (
    SELECT i.queue, i.tenant
    FROM (SELECT DISTINCT queue, tenant FROM input) i
    CROSS JOIN LATERAL (
        SELECT pg_advisory_xact_lock_shared(hashtext('{turns}'), hashtext(i.queue || chr(31) || i.tenant))
    ) l
),
turns AS (
    INSERT INTO {turns} (queue, tenant)
    SELECT queue, tenant FROM locked
    ORDER BY queue, tenant
    ON CONFLICT (queue, tenant) DO NOTHING
)
SELECT pg_notify($9, q.queue)
FROM (SELECT DISTINCT queue FROM ins) q
