-- One item: $1 queue, $2 tenant, $3 id.
SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token
FROM {work}
WHERE queue = $1 AND tenant = $2 AND id = $3
