-- Tenants with queued work in turn order, next first: $1 queue.
SELECT t.tenant
FROM {turns} t
WHERE t.queue = $1
  AND EXISTS (SELECT 1 FROM {work} w WHERE w.queue = t.queue AND w.tenant = t.tenant AND w.state = 'queued')
ORDER BY t.turn_batch, t.turn_pos, t.tenant
