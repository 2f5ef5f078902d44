-- Drops the item's events numbered ?4 and below.
DELETE FROM adk_events WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND n <= ?4
