-- The latest turn of each tenant, most recent first: $1 queue, $2 rows.
SELECT tenant, last_id, coalesce(last_worker, ''), last_at
FROM {turns}
WHERE queue = $1 AND last_at IS NOT NULL
ORDER BY turn_batch DESC, turn_pos DESC
LIMIT $2
