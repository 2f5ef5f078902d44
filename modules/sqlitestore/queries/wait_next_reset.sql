-- The queue's first wait timeout, after the claim ended those due.
UPDATE adk_queues SET wait_next = (SELECT min(wait_until) FROM adk_work WHERE queue = ?1 AND wait_until <> 0) WHERE queue = ?1
