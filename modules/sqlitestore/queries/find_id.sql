-- The items of the queue with id ?2, by tenant.
SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
       enqueued_at, dead_at, worker, lease_expires_at, token,
       priority, snoozes, wait_signal, wait_since, wait_until,
       resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason, unique_for, finished_at
FROM adk_work INDEXED BY adk_work_id WHERE queue = ?1 AND id = ?2 ORDER BY tenant LIMIT ?3
