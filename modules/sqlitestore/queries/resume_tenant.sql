DELETE FROM adk_pauses WHERE queue = ?1 AND tenant = ?2
