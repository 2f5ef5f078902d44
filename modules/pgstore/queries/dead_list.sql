-- One page of dead letters, oldest first: $1 queue, $2 tenant ('' any),
-- $3 id ('' any), $4 error substring ('' any), $5 after this seq, $6 rows,
-- $7 matching letters to pass over first.
SELECT {item_columns}, seq
FROM {work}
WHERE {dead_match}
  AND seq > $5
ORDER BY seq
LIMIT $6 OFFSET $7
