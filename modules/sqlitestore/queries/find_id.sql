-- The items of queue ?1 with id ?2, by tenant: one probe of the key per
-- tenant of the queue's rotation (every tenant that ever held an item of
-- the queue has a row there), never a scan of the items.
SELECT w.queue, w.tenant, w.id, w.state, w.payload, w.metadata, w.not_before, w.attempts, w.last_error,
       w.enqueued_at, w.dead_at, w.worker, w.lease_expires_at, w.token,
       w.priority, w.snoozes, w.wait_signal, w.wait_since, w.wait_until,
       w.resumed_signal, w.resumed_payload, w.resumed_timed_out, w.resumed_at, w.cancelled_at, w.cancel_reason, w.unique_for, w.finished_at
FROM adk_turns t JOIN adk_work w ON w.queue = t.queue AND w.tenant = t.tenant AND w.id = ?2
WHERE t.queue = ?1 ORDER BY t.tenant LIMIT ?3
