-- What a settle of the lease with token ?4 reads of its item, and its
-- queue's cap of events.
SELECT attempts, snoozes, priority, cancelled_at, worker, coalesce((SELECT events FROM adk_retention WHERE queue = ?1), 0)
FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4
