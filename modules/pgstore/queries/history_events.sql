-- An item's events, oldest first: $1 queue, $2 tenant, $3 id, $4 the
-- lowest n to return.
SELECT kind, at, worker, attempt, token, error, next_due, signal, reason, run_time_us
FROM {work}_events
WHERE queue = $1 AND tenant = $2 AND id = $3 AND n >= $4
ORDER BY seq
