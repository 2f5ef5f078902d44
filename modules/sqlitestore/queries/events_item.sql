-- The item's events, oldest first.
SELECT n, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time
FROM adk_events WHERE queue = ?1 AND tenant = ?2 AND id = ?3 ORDER BY n
