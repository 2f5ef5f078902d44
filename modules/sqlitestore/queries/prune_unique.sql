-- The queue's completed items whose uniqueness window closed by ?2.
SELECT tenant, id, state, finished_at, unique_until FROM adk_work INDEXED BY adk_work_unique
WHERE queue = ?1 AND unique_until <> 0 AND unique_until <= ?2 AND state = 'completed'
ORDER BY unique_until LIMIT ?3
