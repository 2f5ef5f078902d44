-- Deletes a leased item whose token matches, unless a cancel marked it,
-- the item asked for a uniqueness window or its queue keeps finished
-- items or records events (those complete through complete_drop.sql or the keep of history.go).
DELETE FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND cancelled_at = 0
  AND unique_for = 0
  AND NOT EXISTS (SELECT 1 FROM adk_retention r WHERE r.queue = ?1 AND (r.age > 0 OR r.count > 0 OR r.events > 0))
