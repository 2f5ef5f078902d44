-- Forgets the charges of tenant ?2 of queue ?1 (every tenant following
-- the queue's default when ?2 is ''): its budget window changed, and a
-- new window starts its count afresh.
DELETE FROM adk_usage
WHERE queue = ?1 AND (tenant = ?2 OR (?2 = '' AND tenant NOT IN (
    SELECT l.tenant FROM adk_limits l WHERE l.queue = ?1 AND l.tenant <> '')))
