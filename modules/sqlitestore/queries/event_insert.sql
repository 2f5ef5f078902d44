-- Appends an event to the item's, numbered after its last.
INSERT INTO adk_events (queue, tenant, id, n, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time)
VALUES (?1, ?2, ?3, coalesce((SELECT max(n) FROM adk_events WHERE queue = ?1 AND tenant = ?2 AND id = ?3), 0) + 1,
        ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
RETURNING n
