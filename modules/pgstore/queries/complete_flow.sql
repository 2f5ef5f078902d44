-- Complete a batch on a queue with limits: complete.sql (read it first)
-- plus a wake. $1..$4 are parallel arrays (queue, tenant, id, token).
--
-- The state is compared through coalesce (state is NOT NULL, so it means
-- the same) so that the planner cannot prove the predicate of the
-- adk_work_leased partial index and reach the rows through it: that
-- index holds only the queue and tenant, and a plan made on stale
-- statistics that uses it filters every leased row of the tenant for each
-- item (measured, when it held only the queue: 700 ms for a batch of 600
-- with ~800 leased). The primary key is the
-- only index left, one descent per item.
--
-- $5 is the notification channel and $6 now: when a completed item's
-- tenant is capped (max_leased in its limits, or in the queue's default)
-- and was at its cap, the queue's claimers are woken on commit, since the
-- lease that ends frees it. The count is the statement's snapshot, which
-- still holds the rows deleted here. On a queue without limits that is
-- one probe of the limits per tenant completed, finding nothing.
WITH done AS (
    DELETE FROM {work} w
    USING unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
      AND coalesce(w.state, '') = 'leased' AND w.token = l.token AND w.cancelled_at IS NULL
    RETURNING w.queue, w.tenant, w.id, w.token
),
woke AS (
    SELECT pg_notify($5, c.queue)
    FROM (SELECT DISTINCT queue, tenant FROM done) c
    CROSS JOIN LATERAL (
        SELECT o.max_leased FROM {work}_limits o WHERE o.queue = c.queue AND o.tenant = c.tenant
        UNION ALL
        SELECT d.max_leased FROM {work}_limits d WHERE d.queue = c.queue AND d.tenant = ''
        LIMIT 1
    ) e
    WHERE e.max_leased > 0
      AND (SELECT count(*) FROM {work} w
           WHERE w.queue = c.queue AND w.tenant = c.tenant AND w.state = 'leased' AND w.lease_expires_at > $6) >= e.max_leased
    LIMIT 1
)
SELECT queue, tenant, id, token, (SELECT count(*) FROM woke) FROM done
