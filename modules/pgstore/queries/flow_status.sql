-- The flow-control state of every tenant of a queue that has items in it
-- or limits of its own: $1 queue, $2 now. Per tenant: its live leases,
-- its rate bucket (0 without a turn row: full), and its usage rows
-- (slot start, cost, tokens, slot width).
WITH tenants AS (
    SELECT t.tenant FROM {turns} t
    WHERE t.queue = $1 AND EXISTS (SELECT 1 FROM {work} w WHERE w.queue = t.queue AND w.tenant = t.tenant)
    UNION
    SELECT l.tenant FROM {work}_limits l WHERE l.queue = $1 AND l.tenant <> ''
)
SELECT n.tenant,
       (SELECT count(*) FROM {work} w WHERE w.queue = $1 AND w.tenant = n.tenant AND w.state = 'leased' AND w.lease_expires_at > $2),
       coalesce((SELECT t.rate_tat FROM {turns} t WHERE t.queue = $1 AND t.tenant = n.tenant), 0),
       array(SELECT u.at_ms FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = n.tenant ORDER BY u.at_ms),
       array(SELECT u.cost_micros FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = n.tenant ORDER BY u.at_ms),
       array(SELECT u.tokens FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = n.tenant ORDER BY u.at_ms),
       array(SELECT u.slot_ms FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = n.tenant ORDER BY u.at_ms)
FROM tenants n
ORDER BY n.tenant
