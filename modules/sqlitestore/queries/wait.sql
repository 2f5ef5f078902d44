-- A lease ends in a wait for signal ?5 from ?6 until ?7.
UPDATE adk_work SET state = 'waiting', seq = ?4, wait_signal = ?5, wait_since = ?6, wait_until = ?7, due_at = ?7,
    worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3
