-- Delete matching dead letters: $1 queue, $2 tenant ('' any), $3 id ('' any),
-- $4 error substring ('' any).
DELETE FROM {work}
WHERE {dead_match}
