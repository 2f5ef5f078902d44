-- A completed item is kept: finished at ?4, its window (if any) closing
-- ?5 after, its lease released.
UPDATE adk_work SET state = 'completed', finished_at = ?4, unique_until = CASE WHEN ?5 > 0 THEN ?4 + ?5 ELSE 0 END,
    worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3
