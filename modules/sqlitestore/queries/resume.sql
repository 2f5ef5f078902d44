-- A wait ends: by signal ?6 with payload ?7 at ?5, or by its timeout
-- (?8 = 1, ?5 its until); the item is queued, due at ?5.
UPDATE adk_work SET state = 'queued', seq = ?4, due_at = ?5, not_before = 0,
    resumed_signal = ?6, resumed_payload = ?7, resumed_timed_out = ?8, resumed_at = ?5,
    wait_signal = '', wait_since = 0, wait_until = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'waiting'
