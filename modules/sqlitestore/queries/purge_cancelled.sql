DELETE FROM adk_work WHERE queue = ?1 AND state = 'cancelled' AND cancelled_at < ?2
