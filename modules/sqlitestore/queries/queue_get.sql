-- The queue's counters, what of it is paused, when its first wait times
-- out, whether any flow-control limit is set on it (a queue without one,
-- and without paused tenants, claims on the path that reads no limit),
-- and its cap of events (0: a claim records none).
SELECT stamp, turn, paused, paused_tenants, wait_next, EXISTS (SELECT 1 FROM adk_limits WHERE queue = ?1),
       coalesce((SELECT events FROM adk_retention WHERE queue = ?1), 0)
FROM adk_queues WHERE queue = ?1
