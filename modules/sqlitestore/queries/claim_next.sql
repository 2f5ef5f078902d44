-- A tenant's two first queued items, when none has a priority other than
-- 0 (the tenant is not ranked): the one to serve, and the one whose due
-- time is the tenant's next wake.
SELECT id, due_at FROM adk_work
WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority = 0
ORDER BY due_at, seq LIMIT 2
