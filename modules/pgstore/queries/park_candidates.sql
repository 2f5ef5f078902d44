-- Turn rows that a claim's first round still visits although their
-- tenant has nothing due: $1 queue, $2 now, $3 rows.
SELECT t.tenant
FROM {turns} t
WHERE t.queue = $1 AND t.wake_at <= $2
  AND NOT EXISTS (
      SELECT 1 FROM {work} w
      WHERE w.queue = t.queue AND w.tenant = t.tenant AND w.state = 'queued' AND w.due_at <= $2
  )
ORDER BY t.tenant
LIMIT $3
