-- The rotation after the cursor ?3, for a claim of a queue with limits:
-- each tenant with an item due, by stamp, with its turn credit, its rate
-- bucket, its own limits (NULL columns when it has none) and, when a cap
-- applies to it (its own, or the default ?5 > 0), its live leases at ?2.
SELECT t.tenant, t.stamp, t.credit, t.tat,
       l.tenant IS NOT NULL, l.max_leased, l.rate, l.burst, l.weight,
       l.budget_cost, l.budget_tokens, l.budget_window_ms,
       CASE WHEN coalesce(l.max_leased, ?5) > 0 THEN
           (SELECT count(*) FROM adk_work w
            WHERE w.queue = t.queue AND w.tenant = t.tenant AND w.state = 'leased' AND w.lease_expires_at > ?2)
       ELSE 0 END
FROM adk_turns t
LEFT JOIN adk_limits l ON l.queue = t.queue AND l.tenant = t.tenant
WHERE t.queue = ?1 AND t.wake_at <= ?2 AND t.stamp > ?3
ORDER BY t.stamp LIMIT ?4
