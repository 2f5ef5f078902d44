DELETE FROM adk_events WHERE queue = ?1 AND tenant = ?2 AND id = ?3
