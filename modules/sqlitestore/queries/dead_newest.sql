-- Dead letters at or before the cursor's place, newest first.
SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
       enqueued_at, dead_at, worker, lease_expires_at, token,
       priority, snoozes, wait_signal, wait_since, wait_until,
       resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason, unique_for, finished_at, seq
FROM adk_work
WHERE queue = ?1 AND state = 'dead' AND (?2 = '' OR tenant = ?2) AND (?3 = '' OR id = ?3) AND seq <= ?4
ORDER BY seq DESC
