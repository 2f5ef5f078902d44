-- Delete the locked turn rows whose tenant still holds no item: $1 queue,
-- $2 tenants. A statement of its own, so its snapshot is taken after the
-- locks: every enqueue that could add an item is either committed (and
-- seen here) or waiting behind the lock (and inserts the row again).
DELETE FROM {turns} t
WHERE t.queue = $1 AND t.tenant = ANY($2::text[])
  AND NOT EXISTS (SELECT 1 FROM {work} w WHERE w.queue = t.queue AND w.tenant = t.tenant)
