-- What a cancel or a signal reads of one item.
SELECT state, wait_signal, wait_until, priority, cancelled_at FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3
