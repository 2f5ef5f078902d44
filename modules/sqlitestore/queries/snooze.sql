-- A snoozed lease ends: the item is queued again, due at ?5 (not before
-- ?6), one snooze more, no attempt charged.
UPDATE adk_work SET state = 'queued', seq = ?4, due_at = ?5, not_before = ?6, snoozes = snoozes + 1,
    worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3
