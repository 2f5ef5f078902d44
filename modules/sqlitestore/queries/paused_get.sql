SELECT paused FROM adk_queues WHERE queue = ?1
