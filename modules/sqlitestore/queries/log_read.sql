-- The queue's log after number ?2, oldest first.
SELECT seq, tenant, id, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time
FROM adk_event_log WHERE queue = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3
