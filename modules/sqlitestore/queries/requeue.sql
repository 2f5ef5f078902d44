UPDATE adk_work SET state = 'queued', seq = ?4, due_at = ?5, not_before = 0, attempts = 0, dead_at = 0, enqueued_at = ?5
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'dead'
