-- Charge usage to a tenant: $1 queue, $2 tenant, $3 cost micros, $4
-- tokens, $5 now in Unix milliseconds. The usage is added to the slot of
-- now of the tenant's budget (its own, else the queue's default), a tenth
-- of the budget's window wide; the rows that have left the window, and
-- those of another width (the window changed), are deleted. A tenant
-- without a budget keeps no usage.
WITH slot AS (
    SELECT w, $5 - (($5 % w) + w) % w AS at_ms
    FROM (
        SELECT e.budget_window_ms / 10 AS w
        FROM (
            SELECT o.budget_window_ms FROM {work}_limits o WHERE o.queue = $1 AND o.tenant = $2
            UNION ALL
            SELECT d.budget_window_ms FROM {work}_limits d WHERE d.queue = $1 AND d.tenant = ''
            LIMIT 1
        ) e
        WHERE e.budget_window_ms > 0
    ) x
),
added AS (
    INSERT INTO {work}_usage (queue, tenant, at_ms, slot_ms, cost_micros, tokens)
    SELECT $1, $2, s.at_ms, s.w, $3, $4 FROM slot s
    ON CONFLICT (queue, tenant, at_ms) DO UPDATE
    SET cost_micros = CASE WHEN {work}_usage.slot_ms = excluded.slot_ms THEN {work}_usage.cost_micros ELSE 0 END + excluded.cost_micros,
        tokens      = CASE WHEN {work}_usage.slot_ms = excluded.slot_ms THEN {work}_usage.tokens ELSE 0 END + excluded.tokens,
        slot_ms     = excluded.slot_ms
),
pruned AS (
    DELETE FROM {work}_usage u
    USING slot s
    WHERE u.queue = $1 AND u.tenant = $2 AND u.at_ms <> s.at_ms
      AND (u.at_ms < s.at_ms - 10 * s.w OR u.slot_ms <> s.w)
)
SELECT 1
