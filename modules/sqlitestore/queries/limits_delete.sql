DELETE FROM adk_limits WHERE queue = ?1 AND tenant = ?2
