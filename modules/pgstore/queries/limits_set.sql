-- Set one tenant's limits in a queue ('' for the queue's default), or
-- remove them: $1 queue, $2 tenant, $3 max_leased, $4 rate, $5 burst,
-- $6 weight, $7 budget cost, $8 budget tokens, $9 budget window (ms),
-- $10 remove (the zero Limits), $11 the notification channel. Claimers
-- are woken on commit: the change may free a held tenant.
WITH removed AS (
    DELETE FROM {work}_limits WHERE queue = $1 AND tenant = $2 AND $10
),
written AS (
    INSERT INTO {work}_limits (queue, tenant, max_leased, rate, burst, weight, budget_cost, budget_tokens, budget_window_ms)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE NOT $10
    ON CONFLICT (queue, tenant) DO UPDATE
    SET max_leased = excluded.max_leased, rate = excluded.rate, burst = excluded.burst, weight = excluded.weight,
        budget_cost = excluded.budget_cost, budget_tokens = excluded.budget_tokens, budget_window_ms = excluded.budget_window_ms
)
SELECT pg_notify($11, $1)
