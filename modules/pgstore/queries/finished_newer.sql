-- Finished items newer than the key, oldest of them first (the queue
-- reverses the page): the arguments of finished_older.sql.
SELECT {item_columns}
FROM {work}
WHERE queue = $1 AND finished_at IS NOT NULL
  AND (finished_at, tenant, id) > ($7::timestamptz, $8::text, $9::text)
  AND ($2::text = '' OR tenant = $2) AND ($3::text = '' OR state = $3) AND ($4::text = '' OR id = $4)
  AND ($5::timestamptz IS NULL OR finished_at >= $5) AND ($6::timestamptz IS NULL OR finished_at < $6)
ORDER BY finished_at, tenant, id
LIMIT $10
