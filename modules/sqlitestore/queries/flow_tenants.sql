-- A queue's flow status at ?2, by tenant: those holding queued, leased or
-- dead items (every one has a rotation row; a probe of the key per
-- tenant, not a scan of the items) and those with limits of their own,
-- each with its rate bucket,
-- its live leases (from the queue's index of leases by expiry) and its own
-- limits (NULL columns when it has none).
WITH live AS (
    SELECT tenant, count(*) AS n FROM adk_work
    WHERE queue = ?1 AND state = 'leased' AND lease_expires_at > ?2
    GROUP BY tenant
), names AS (
    SELECT t.tenant FROM adk_turns t
    WHERE t.queue = ?1 AND EXISTS (SELECT 1 FROM adk_work w WHERE w.queue = ?1 AND w.tenant = t.tenant AND w.state IN ('queued', 'leased', 'dead'))
    UNION
    SELECT tenant FROM adk_limits WHERE queue = ?1 AND tenant <> ''
)
SELECT n.tenant, coalesce(t.tat, 0), coalesce(live.n, 0),
       l.tenant IS NOT NULL, l.max_leased, l.rate, l.burst, l.weight,
       l.budget_cost, l.budget_tokens, l.budget_window_ms
FROM names n
LEFT JOIN adk_turns t ON t.queue = ?1 AND t.tenant = n.tenant
LEFT JOIN live ON live.tenant = n.tenant
LEFT JOIN adk_limits l ON l.queue = ?1 AND l.tenant = n.tenant
ORDER BY n.tenant
