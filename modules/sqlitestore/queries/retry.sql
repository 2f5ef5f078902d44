UPDATE adk_work SET state = 'queued', seq = ?4, due_at = ?5, not_before = ?6, attempts = ?7, last_error = ?8,
    worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3
