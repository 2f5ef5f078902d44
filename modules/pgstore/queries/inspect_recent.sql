-- The most recent turns, most recent first: $1 queue, $2 rows. Each
-- tenant keeps its latest 32, so the listing is exact unless one tenant
-- took more than 32 of the last $2 turns.
SELECT t.tenant, r.id, r.worker, r.at
FROM {turns} t
CROSS JOIN LATERAL unnest(t.recent_ids, t.recent_workers, t.recent_at, t.recent_keys) AS r(id, worker, at, key)
WHERE t.queue = $1
ORDER BY r.key DESC
LIMIT $2
