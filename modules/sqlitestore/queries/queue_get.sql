-- The queue's counters, what of it is paused, when its first wait times
-- out, and whether any flow-control limit is set on it: a queue without
-- one, and without paused tenants, claims on the path that reads no limit.
SELECT stamp, turn, paused, paused_tenants, wait_next, EXISTS (SELECT 1 FROM adk_limits WHERE queue = ?1) FROM adk_queues WHERE queue = ?1
