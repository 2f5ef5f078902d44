-- What a cancel or a signal reads of one item, and its queue's cap of
-- events.
SELECT state, wait_signal, wait_until, priority, cancelled_at, coalesce((SELECT events FROM adk_retention WHERE queue = ?1), 0)
FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3
