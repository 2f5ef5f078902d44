-- The queue's finished items, oldest first, after (?2, ?3, ?4).
SELECT tenant, id, state, finished_at, unique_until FROM adk_work INDEXED BY adk_work_finished
WHERE queue = ?1 AND finished_at <> 0 AND (finished_at, tenant, id) > (?2, ?3, ?4)
ORDER BY finished_at, tenant, id LIMIT ?5
