-- The most recent turns, most recent first: $1 queue, $2 rows. Each
-- tenant keeps only its latest 32 turns, so once a tenant's list is full
-- the turns older than its oldest kept one are incomplete: the listing
-- stops there (at the newest such cut-off) rather than show a window in
-- which a busy tenant seems to have been skipped.
WITH t AS (
    SELECT tenant, recent_ids, recent_workers, recent_at, recent_keys
    FROM {turns}
    WHERE queue = $1
), cut AS (
    SELECT coalesce(max(recent_keys[1]), 0) AS k
    FROM t
    WHERE cardinality(recent_keys) >= 32
)
SELECT t.tenant, r.id, r.worker, r.at
FROM t
CROSS JOIN LATERAL unnest(t.recent_ids, t.recent_workers, t.recent_at, t.recent_keys) AS r(id, worker, at, key)
CROSS JOIN cut
WHERE r.key >= cut.k
ORDER BY r.key DESC
LIMIT $2
