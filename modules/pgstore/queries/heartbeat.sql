-- Extend a live lease under a new token: $1 queue, $2 tenant, $3 id,
-- $4 the token held, $5 new expiry, $6 now. Only the lease columns
-- change and none of them is indexed, so this is a HOT update.
UPDATE {work}
SET lease_expires_at = $5, token = nextval('{work}_token_seq')
WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'leased' AND token = $4 AND lease_expires_at > $6
RETURNING queue, tenant, id, state, payload, metadata, not_before, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token
