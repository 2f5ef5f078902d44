-- The queue's waits that timed out by ?2, first first.
SELECT tenant, id, wait_signal, wait_until, priority FROM adk_work
WHERE queue = ?1 AND wait_until <> 0 AND wait_until <= ?2
ORDER BY wait_until, seq
