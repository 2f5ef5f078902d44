-- Extends a live lease under a new token; nothing when the token no
-- longer matches or the lease has expired.
UPDATE adk_work SET lease_expires_at = ?6, token = ?7
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND lease_expires_at > ?5
RETURNING queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
          enqueued_at, dead_at, worker, lease_expires_at, token
