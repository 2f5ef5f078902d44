-- The rotation after the cursor ?3, for a claim of a queue with limits:
-- each tenant with an item due, by stamp, with its turn credit, its rate
-- bucket, its own limits (NULL columns when it has none: then the
-- default's, ?5 to ?7, apply) and whether its budget's window at ?8 (Unix
-- milliseconds) holds charges that reach a ceiling; whether it is ranked,
-- and, when ?9 says the queue has paused tenants, whether it is one; and,
-- when a cap applies to it (?10 is the default's) and ?11 asks for it,
-- its live leases at ?2 (those not yet expired, reaped or not), counted
-- from the queue's index of leases by expiry, in which every entry names
-- its tenant. That index is not led by the tenant, so each count reads
-- every live lease of the queue: a claim that reads past its first page
-- (tenants held ahead of it) counts them all at once with
-- leased_by_tenant.sql instead and sets ?11 false.
SELECT t.tenant, t.stamp, t.credit, t.tat, t.ranked,
       CASE WHEN ?9 THEN EXISTS (SELECT 1 FROM adk_pauses p WHERE p.queue = t.queue AND p.tenant = t.tenant) ELSE 0 END,
       l.tenant IS NOT NULL, l.max_leased, l.rate, l.burst, l.weight,
       l.budget_cost, l.budget_tokens, l.budget_window_ms,
       CASE WHEN coalesce(l.budget_window_ms, ?5) > 0 THEN (
           SELECT (coalesce(l.budget_cost, ?6) > 0 AND coalesce(sum(u.cost_micros), 0) >= coalesce(l.budget_cost, ?6))
               OR (coalesce(l.budget_tokens, ?7) > 0 AND coalesce(sum(u.tokens), 0) >= coalesce(l.budget_tokens, ?7))
           FROM adk_usage u
           WHERE u.queue = t.queue AND u.tenant = t.tenant
             AND u.start_ms >= (?8 / (coalesce(l.budget_window_ms, ?5) / 10) - 10) * (coalesce(l.budget_window_ms, ?5) / 10)
             AND u.start_ms <  (?8 / (coalesce(l.budget_window_ms, ?5) / 10) + 1) * (coalesce(l.budget_window_ms, ?5) / 10)
       ) ELSE 0 END,
       CASE WHEN ?11 AND coalesce(l.max_leased, ?10) > 0 THEN (
           SELECT count(*) FROM adk_work w INDEXED BY adk_work_leased
           WHERE w.queue = t.queue AND w.state = 'leased' AND w.lease_expires_at > ?2 AND w.tenant = t.tenant
       ) ELSE 0 END
FROM adk_turns t
LEFT JOIN adk_limits l ON l.queue = t.queue AND l.tenant = t.tenant
WHERE t.queue = ?1 AND t.wake_at <= ?2 AND t.asleep = 0 AND t.stamp > ?3
ORDER BY t.stamp LIMIT ?4
