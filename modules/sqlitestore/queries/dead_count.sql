SELECT count(*) FROM adk_work WHERE queue = ?1 AND state = 'dead' AND (?2 = '' OR tenant = ?2)
