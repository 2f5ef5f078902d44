-- Whether a cap applies to any tenant of the queue: a lease that ends
-- there may free a held tenant, so claimers are woken.
SELECT EXISTS (SELECT 1 FROM adk_limits WHERE queue = ?1 AND max_leased > 0)
