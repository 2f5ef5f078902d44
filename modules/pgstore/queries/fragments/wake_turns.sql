-- Wake parked tenants: the CTEs wake_lock and wake, for a statement that
-- makes items due and names their tenants in a CTE woken(queue, tenant,
-- due_at), one row per tenant with its earliest new due time. A tenant
-- parked past that time wakes at it. A claim parks only under the
-- exclusive side of the tenant's turn lock, and the transaction took the
-- shared side in the statement before (turns_share.sql), so the park this
-- sees is the last one before commit. The rows are locked in key order
-- first, so two statements that wake the same tenants cannot deadlock.
-- Queries name it {wake_turns}.
wake_lock AS (
    SELECT t.queue, t.tenant, d.due_at
    FROM {turns} t
    JOIN woken d ON t.queue = d.queue AND t.tenant = d.tenant
    WHERE t.wake_at > d.due_at
    ORDER BY t.queue, t.tenant
    FOR NO KEY UPDATE OF t
),
wake AS (
    UPDATE {turns} t
    SET wake_at = l.due_at
    FROM wake_lock l
    WHERE t.queue = l.queue AND t.tenant = l.tenant AND t.wake_at > l.due_at
)
