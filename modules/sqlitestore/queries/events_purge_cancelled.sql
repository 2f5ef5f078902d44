-- The events of the queue's items cancelled before ?2 (PurgeCancelled).
DELETE FROM adk_events WHERE (queue, tenant, id) IN
  (SELECT queue, tenant, id FROM adk_work WHERE queue = ?1 AND state = 'cancelled' AND cancelled_at < ?2)
