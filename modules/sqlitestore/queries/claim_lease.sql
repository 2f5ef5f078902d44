UPDATE adk_work SET state = 'leased', worker = ?4, lease_expires_at = ?5, token = ?6
WHERE queue = ?1 AND tenant = ?2 AND id = ?3
RETURNING queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
          enqueued_at, dead_at, worker, lease_expires_at, token,
          priority, snoozes, resumed_at, unique_for
