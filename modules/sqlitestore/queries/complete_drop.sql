-- Deletes a leased item (token ?4) that no cancel marked and that asked
-- for no window, for a queue that records events but keeps no finished
-- item. Returns its attempts; no row when the item stays (a window) or
-- the lease does not hold it.
DELETE FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND cancelled_at = 0
  AND unique_for = 0
RETURNING attempts
