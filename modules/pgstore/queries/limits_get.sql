-- Every limits row of a queue, the default ('') first: $1 queue.
SELECT tenant, max_leased, rate, burst, weight, budget_cost, budget_tokens, budget_window_ms
FROM {work}_limits
WHERE queue = $1
ORDER BY tenant
