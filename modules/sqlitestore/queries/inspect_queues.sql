SELECT queue FROM adk_queues q WHERE EXISTS (SELECT 1 FROM adk_work w WHERE w.queue = q.queue) ORDER BY queue
