DELETE FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3
