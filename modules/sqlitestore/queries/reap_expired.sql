SELECT tenant, id, attempts, priority, cancelled_at, token FROM adk_work
WHERE queue = ?1 AND state = 'leased' AND lease_expires_at <= ?2
ORDER BY lease_expires_at, token
