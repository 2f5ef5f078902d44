-- Charge usage to a tenant: $1 queue, $2 tenant, $3 cost micros, $4
-- tokens, $5 now in Unix milliseconds, $6 the slot width (ms) and $7 how long
-- usage is kept (ms) when the tenant has no budget. The usage is added to the slot of now in the
-- tenant's budget (its own, else the queue's default), whose width is a
-- tenth of the budget's window; rows that have left the window (or, with
-- no budget, are older than $7 ms) are deleted.
WITH lim AS (
    SELECT budget_window_ms / 10 AS slot_ms
    FROM (
        SELECT o.budget_window_ms FROM {work}_limits o WHERE o.queue = $1 AND o.tenant = $2
        UNION ALL
        SELECT d.budget_window_ms FROM {work}_limits d WHERE d.queue = $1 AND d.tenant = ''
        LIMIT 1
    ) e
    WHERE budget_window_ms > 0
),
slot AS (
    SELECT w, $5 - (($5 % w) + w) % w AS at_ms, (SELECT count(*) FROM lim) > 0 AS budgeted
    FROM (SELECT coalesce((SELECT slot_ms FROM lim), $6) AS w) x
),
added AS (
    INSERT INTO {work}_usage (queue, tenant, at_ms, cost_micros, tokens)
    SELECT $1, $2, s.at_ms, $3, $4 FROM slot s
    ON CONFLICT (queue, tenant, at_ms) DO UPDATE
    SET cost_micros = {work}_usage.cost_micros + excluded.cost_micros, tokens = {work}_usage.tokens + excluded.tokens
),
pruned AS (
    DELETE FROM {work}_usage u
    USING slot s
    WHERE u.queue = $1 AND u.tenant = $2
      AND u.at_ms < CASE WHEN s.budgeted THEN s.at_ms - 10 * s.w ELSE $5 - $7 END
)
SELECT 1
