SELECT stamp, turn FROM adk_queues WHERE queue = ?
