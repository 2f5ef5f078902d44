-- Completes a leased item (token ?4) that no cancel marked, keeping it:
-- finished at ?5, its window (if it asked for one) closing unique_for
-- after, its lease released. Returns its attempts; no row when the lease
-- does not hold the item.
UPDATE adk_work SET state = 'completed', finished_at = ?5,
    unique_until = CASE WHEN unique_for > 0 THEN ?5 + unique_for ELSE 0 END,
    worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND cancelled_at = 0
RETURNING attempts
