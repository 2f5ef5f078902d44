-- The live leases of each tenant of the queue at ?2: those not yet
-- expired, reaped or not.
SELECT tenant, count(*) FROM adk_work
WHERE queue = ?1 AND state = 'leased' AND lease_expires_at > ?2
GROUP BY tenant
