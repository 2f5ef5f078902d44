-- What a settle of the lease with token ?4 reads of its item.
SELECT attempts, snoozes, priority, cancelled_at FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4
