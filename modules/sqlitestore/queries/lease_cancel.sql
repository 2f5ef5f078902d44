-- The holder of a lease a cancel marked came back (token ?4, live at ?5
-- when ?5 is not NULL): the item is cancelled at ?6, nothing else
-- written. It returns the cancel's reason and the queue's cap of events.
UPDATE adk_work SET state = 'cancelled', worker = '', lease_expires_at = 0, token = 0, finished_at = (?6 / 1000) * 1000
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND cancelled_at <> 0
  AND (?5 IS NULL OR lease_expires_at > ?5)
RETURNING cancel_reason, coalesce((SELECT events FROM adk_retention WHERE queue = ?1), 0)
