-- Complete a batch on a queue with limits: complete.sql (read it first)
-- plus a wake. $1..$4 are parallel arrays (queue, tenant, id, token), $5
-- now (fragments/complete_done.sql). The primary key is the only index
-- left, one descent per item.
--
-- $6 is the notification channel: when a completed item's
-- tenant is capped (max_leased in its limits, or in the queue's default)
-- and was at its cap, the queue's claimers are woken on commit, since the
-- lease that ends frees it. The count is the statement's snapshot, which
-- still holds the rows deleted here. On a queue without limits that is
-- one probe of the limits per tenant completed, finding nothing. Like
-- complete.sql it is rendered twice (queries.go), in full and lean.
WITH
{done},
woke AS (
    SELECT pg_notify($6, c.queue)
    FROM (SELECT DISTINCT queue, tenant FROM done) c
    CROSS JOIN LATERAL (
        SELECT o.max_leased FROM {work}_limits o WHERE o.queue = c.queue AND o.tenant = c.tenant
        UNION ALL
        SELECT d.max_leased FROM {work}_limits d WHERE d.queue = c.queue AND d.tenant = ''
        LIMIT 1
    ) e
    WHERE e.max_leased > 0
      AND (SELECT count(*) FROM {work} w
           WHERE w.queue = c.queue AND w.tenant = c.tenant AND w.state = 'leased' AND w.lease_expires_at > $5) >= e.max_leased
    LIMIT 1
)
SELECT queue, tenant, id, token, (SELECT count(*) FROM woke) FROM done
{done_more}
