INSERT INTO adk_limits (queue, tenant, max_leased, rate, burst, weight, budget_cost, budget_tokens, budget_window_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (queue, tenant) DO UPDATE SET
    max_leased = excluded.max_leased, rate = excluded.rate, burst = excluded.burst, weight = excluded.weight,
    budget_cost = excluded.budget_cost, budget_tokens = excluded.budget_tokens, budget_window_ms = excluded.budget_window_ms
