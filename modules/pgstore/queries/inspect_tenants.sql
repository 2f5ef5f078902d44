-- Per-tenant counts of a queue: $1 queue, $2 now. A paused tenant is
-- listed even when it holds nothing.
WITH tenants AS (
    SELECT t.tenant, t.served FROM {turns} t WHERE t.queue = $1
    UNION ALL
    SELECT z.tenant, 0 FROM {work}_pauses z
    WHERE z.queue = $1 AND z.tenant <> ''
      AND NOT EXISTS (SELECT 1 FROM {turns} t WHERE t.queue = $1 AND t.tenant = z.tenant)
)
SELECT t.tenant,
       count(w.id) FILTER (WHERE w.state = 'queued' AND w.due_at <= $2) AS ready,
       count(w.id) FILTER (WHERE w.state = 'queued' AND w.due_at > $2)  AS later,
       count(w.id) FILTER (WHERE w.state = 'leased')                    AS leased,
       count(w.id) FILTER (WHERE w.state = 'dead')                      AS dead,
       t.served,
       min(w.enqueued_at) FILTER (WHERE w.state = 'queued' AND w.due_at <= $2) AS oldest_ready,
       count(w.id) FILTER (WHERE w.state = 'waiting')                   AS waiting,
       count(w.id) FILTER (WHERE w.state = 'cancelled')                 AS cancelled,
       EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = t.tenant) AS paused
FROM tenants t
LEFT JOIN {work} w ON w.queue = $1 AND w.tenant = t.tenant
GROUP BY t.tenant, t.served
HAVING count(w.id) > 0 OR t.served > 0 OR EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = t.tenant)
ORDER BY t.tenant
