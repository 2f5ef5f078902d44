-- The tenant's charges whose slot starts in [?3, ?4).
SELECT start_ms, cost_micros, tokens FROM adk_usage
WHERE queue = ?1 AND tenant = ?2 AND start_ms >= ?3 AND start_ms < ?4
ORDER BY start_ms
