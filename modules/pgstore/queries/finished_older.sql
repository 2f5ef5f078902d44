-- Finished items newest first, older than the key ($7 finished_at, $8
-- tenant, $9 id): $1 queue, $2 tenant or '', $3 state or '', $4 id or
-- '', $5 since or NULL, $6 until or NULL, $10 limit. Walks
-- {work}_finished backwards from the key.
SELECT {item_columns}
FROM {work}
WHERE queue = $1 AND finished_at IS NOT NULL
  AND (finished_at, tenant, id) < ($7::timestamptz, $8::text, $9::text)
  AND ($2::text = '' OR tenant = $2) AND ($3::text = '' OR state = $3) AND ($4::text = '' OR id = $4)
  AND ($5::timestamptz IS NULL OR finished_at >= $5) AND ($6::timestamptz IS NULL OR finished_at < $6)
ORDER BY finished_at DESC, tenant DESC, id DESC
LIMIT $10
