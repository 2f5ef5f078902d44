-- claim_next.sql for a ranked tenant: its two first items due at ?3 by
-- priority, due time and order: the one to serve, and one that keeps the
-- tenant in the rotation (its due time, at or before ?3, is the tenant's
-- next wake). A not yet due item of a higher priority is stepped over,
-- never served early.
SELECT id, due_at FROM adk_work INDEXED BY adk_work_ready
WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND due_at <= ?3
ORDER BY priority DESC, due_at, seq LIMIT 2
