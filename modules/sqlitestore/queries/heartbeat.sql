-- Extends a live lease under a new token; nothing when the token no
-- longer matches, the lease has expired or a cancel marked it. While the
-- queue records events it counts the heartbeat.
UPDATE adk_work SET lease_expires_at = ?6, token = ?7,
    heartbeats = heartbeats + EXISTS (SELECT 1 FROM adk_retention WHERE queue = ?1 AND events > 0)
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND token = ?4 AND lease_expires_at > ?5 AND cancelled_at = 0
RETURNING queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
          enqueued_at, dead_at, worker, lease_expires_at, token,
          priority, snoozes, resumed_at, unique_for
