SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
       enqueued_at, dead_at, worker, lease_expires_at, token
FROM adk_work WHERE queue = ? AND tenant = ? AND id = ?
