-- What the complete of a lease (token ?4) whose item is kept or whose
-- queue records events reads: the item's worker, attempts and window, and
-- its queue's retention.
SELECT w.worker, w.attempts, w.unique_for, coalesce(r.age, 0), coalesce(r.count, 0), coalesce(r.events, 0)
FROM adk_work w LEFT JOIN adk_retention r ON r.queue = w.queue
WHERE w.queue = ?1 AND w.tenant = ?2 AND w.id = ?3 AND w.state = 'leased' AND w.token = ?4 AND w.cancelled_at = 0
