UPDATE adk_work SET state = 'dead', seq = ?4, dead_at = ?5, attempts = ?6, last_error = ?7,
    worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3
