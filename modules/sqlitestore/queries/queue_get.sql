-- The queue's counters, what of it is paused, when its first wait times
-- out, whether any flow-control limit is set on it (a queue without one,
-- and without paused tenants, claims on the path that reads no limit),
-- and its cap of events (0: a claim records none), and whether a
-- sleeping tenant's wake time has come by ?2, now (then the claim wakes
-- those tenants first: turn_sweep.sql). For a queue with
-- limits, what its claim reads of them first: the queue's default limits
-- (NULL columns when it has none), whether a cap applies to any of its
-- tenants and whether a budget does. Each of those questions is one probe
-- of a partial index, however many tenants have limits (without INDEXED
-- BY the planner walks the queue's limits rows), and a queue without
-- limits asks neither.
SELECT q.stamp, q.turn, q.paused, q.paused_tenants, q.wait_next, f.limited,
       coalesce((SELECT events FROM adk_retention WHERE queue = ?1), 0),
       d.max_leased, d.rate, d.burst, d.weight, d.budget_cost, d.budget_tokens, d.budget_window_ms,
       CASE WHEN f.limited THEN EXISTS (SELECT 1 FROM adk_limits c INDEXED BY adk_limits_capped WHERE c.queue = ?1 AND c.max_leased > 0) ELSE 0 END,
       CASE WHEN f.limited THEN EXISTS (SELECT 1 FROM adk_limits b INDEXED BY adk_limits_budgeted WHERE b.queue = ?1 AND b.budget_window_ms > 0) ELSE 0 END,
       EXISTS (SELECT 1 FROM adk_turns s INDEXED BY adk_turns_asleep WHERE s.queue = ?1 AND s.asleep = 1 AND s.wake_at <= ?2)
FROM adk_queues q
CROSS JOIN (SELECT EXISTS (SELECT 1 FROM adk_limits WHERE queue = ?1) AS limited) f
LEFT JOIN adk_limits d ON d.queue = ?1 AND d.tenant = ''
WHERE q.queue = ?1
