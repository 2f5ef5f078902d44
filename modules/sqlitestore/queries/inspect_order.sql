-- Tenants with queued work: those with an item due first, by stamp (the
-- order claims serve them), then the others by when they fall due.
SELECT tenant FROM adk_turns
WHERE queue = ?1 AND wake_at IS NOT NULL
ORDER BY wake_at > ?2, CASE WHEN wake_at <= ?2 THEN stamp ELSE wake_at END, stamp
