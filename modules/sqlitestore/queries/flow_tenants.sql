-- The tenants of a queue's flow status: those holding items (with their
-- live leases at ?2 and rate bucket) and those with limits of their own.
SELECT x.tenant, coalesce(sum(x.live), 0), coalesce((SELECT tat FROM adk_turns t WHERE t.queue = ?1 AND t.tenant = x.tenant), 0)
FROM (
    SELECT tenant, state = 'leased' AND lease_expires_at > ?2 AS live FROM adk_work WHERE queue = ?1
    UNION ALL
    SELECT tenant, 0 FROM adk_limits WHERE queue = ?1 AND tenant <> ''
) x
GROUP BY x.tenant ORDER BY x.tenant
