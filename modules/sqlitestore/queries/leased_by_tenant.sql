-- The live leases at ?2 of every tenant of queue ?1 that holds one, for a
-- flow claim that reads the rotation past its first page (see
-- flow_heads.sql): one pass over the queue's index of leases by expiry
-- instead of one per tenant read.
SELECT tenant, count(*) FROM adk_work INDEXED BY adk_work_leased
WHERE queue = ?1 AND state = 'leased' AND lease_expires_at > ?2
GROUP BY tenant
