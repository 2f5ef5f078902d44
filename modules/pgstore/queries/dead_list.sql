-- One page of dead letters, oldest first: $1 queue, $2 tenant ('' any),
-- $3 id ('' any), $4 error substring ('' any), $5 after this seq, $6 rows,
-- $7 matching letters to pass over first.
SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token, seq
FROM {work}
WHERE {dead_match}
  AND seq > $5
ORDER BY seq
LIMIT $6 OFFSET $7
