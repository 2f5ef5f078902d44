-- Turn rows of tenants that hold no item in the queue and were last
-- served before the cutoff: $1 queue, $2 cutoff, $3 rows, $4 now in Unix
-- microseconds. A row whose rate bucket is not full yet (rate_tat after
-- now) is kept, so a tenant cannot come back to a fresh bucket early.
SELECT t.tenant
FROM {turns} t
WHERE t.queue = $1
  AND (cardinality(t.recent_at) = 0 OR t.recent_at[cardinality(t.recent_at)] < $2)
  AND t.rate_tat <= $4
  AND NOT EXISTS (SELECT 1 FROM {work} w WHERE w.queue = t.queue AND w.tenant = t.tenant)
ORDER BY t.tenant
LIMIT $3
FOR UPDATE SKIP LOCKED
