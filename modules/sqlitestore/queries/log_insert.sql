INSERT INTO adk_event_log (queue, seq, tenant, id, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
