-- How many dead letters a filter matches: $1 queue, $2 tenant ('' any),
-- $3 id ('' any), $4 error substring ('' any).
SELECT count(*)
FROM {work}
WHERE {dead_match}
