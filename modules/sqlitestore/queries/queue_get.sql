-- The queue's counters, and whether any flow-control limit is set on it:
-- a queue without one claims on the path that reads no limit.
SELECT stamp, turn, EXISTS (SELECT 1 FROM adk_limits WHERE queue = ?1) FROM adk_queues WHERE queue = ?1
