-- What a claim of a queue with limits reads first: the queue's default
-- limits (NULL columns when it has none), whether a cap applies to any of
-- its tenants (then the claim counts their live leases) and whether a
-- budget does (then its read of the rotation sums their charges). Each
-- question is one probe of a partial index, however many tenants have
-- limits (without INDEXED BY the planner walks the queue's limits rows).
SELECT d.max_leased, d.rate, d.burst, d.weight, d.budget_cost, d.budget_tokens, d.budget_window_ms,
       EXISTS (SELECT 1 FROM adk_limits c INDEXED BY adk_limits_capped WHERE c.queue = ?1 AND c.max_leased > 0),
       EXISTS (SELECT 1 FROM adk_limits b INDEXED BY adk_limits_budgeted WHERE b.queue = ?1 AND b.budget_window_ms > 0)
FROM (SELECT 1) LEFT JOIN adk_limits d ON d.queue = ?1 AND d.tenant = ''
