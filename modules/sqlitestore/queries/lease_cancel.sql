-- The holder of a lease a cancel marked came back (token ?4, live at ?5
-- when ?5 is not NULL): the item is cancelled, nothing else written.
UPDATE adk_work SET state = 'cancelled', worker = '', lease_expires_at = 0, token = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND cancelled_at <> 0
  AND (?5 IS NULL OR lease_expires_at > ?5)
