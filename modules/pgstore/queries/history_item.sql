-- History's item: $1 queue, $2 tenant, $3 id. Also its event count, its
-- heartbeats and the queue's Retention.Events (0 when none).
SELECT {item_columns}, events, heartbeats,
       coalesce((SELECT r.events FROM {work}_retention r WHERE r.queue = $1), 0)
FROM {work}
WHERE queue = $1 AND tenant = $2 AND id = $3
