-- flow_heads.sql for a queue where no budget is set: the same columns,
-- without summing any charges (?5 as flow_heads.sql's ?9, ?6 as its ?10,
-- ?7 as its ?11).
SELECT t.tenant, t.stamp, t.credit, t.tat, t.ranked,
       CASE WHEN ?5 THEN EXISTS (SELECT 1 FROM adk_pauses p WHERE p.queue = t.queue AND p.tenant = t.tenant) ELSE 0 END,
       l.tenant IS NOT NULL, l.max_leased, l.rate, l.burst, l.weight,
       l.budget_cost, l.budget_tokens, l.budget_window_ms,
       0,
       CASE WHEN ?7 AND coalesce(l.max_leased, ?6) > 0 THEN (
           SELECT count(*) FROM adk_work w INDEXED BY adk_work_leased
           WHERE w.queue = t.queue AND w.state = 'leased' AND w.lease_expires_at > ?2 AND w.tenant = t.tenant
       ) ELSE 0 END
FROM adk_turns t
LEFT JOIN adk_limits l ON l.queue = t.queue AND l.tenant = t.tenant
WHERE t.queue = ?1 AND t.wake_at <= ?2 AND t.asleep = 0 AND t.stamp > ?3
ORDER BY t.stamp LIMIT ?4
