-- A tenant's two first queued items: the one to serve, and the one whose
-- due time is the tenant's next wake.
SELECT id, due_at FROM adk_work
WHERE queue = ?1 AND tenant = ?2 AND state = 'queued'
ORDER BY due_at, seq LIMIT 2
