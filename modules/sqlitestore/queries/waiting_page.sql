-- Waiting items after the cursor's place, longest waiting first.
SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
       enqueued_at, dead_at, worker, lease_expires_at, token,
       priority, snoozes, wait_signal, wait_since, wait_until,
       resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason, unique_for, finished_at, seq
FROM adk_work
WHERE queue = ?1 AND wait_until <> 0 AND seq > ?2
ORDER BY seq LIMIT ?3
