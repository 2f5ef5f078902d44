-- Per-tenant counts of a queue: $1 queue, $2 now.
SELECT t.tenant,
       count(w.id) FILTER (WHERE w.state = 'queued' AND w.due_at <= $2) AS ready,
       count(w.id) FILTER (WHERE w.state = 'queued' AND w.due_at > $2)  AS later,
       count(w.id) FILTER (WHERE w.state = 'leased')                    AS leased,
       count(w.id) FILTER (WHERE w.state = 'dead')                      AS dead,
       t.served,
       min(w.enqueued_at) FILTER (WHERE w.state = 'queued' AND w.due_at <= $2) AS oldest_ready
FROM {turns} t
LEFT JOIN {work} w ON w.queue = t.queue AND w.tenant = t.tenant
WHERE t.queue = $1
GROUP BY t.tenant, t.served
HAVING count(w.id) > 0 OR t.served > 0
ORDER BY t.tenant
