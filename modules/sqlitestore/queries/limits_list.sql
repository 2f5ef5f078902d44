SELECT tenant, max_leased, rate, burst, weight, budget_cost, budget_tokens, budget_window_ms
FROM adk_limits WHERE queue = ?1 ORDER BY tenant
