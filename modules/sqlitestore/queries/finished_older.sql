-- Finished items of the queue before (?2, ?3, ?4), newest first; ?5
-- tenant, ?6 state, ?7 id ('' any), finished from ?8 until before ?9.
SELECT queue, tenant, id, state, payload, metadata, not_before, attempts, last_error,
       enqueued_at, dead_at, worker, lease_expires_at, token,
       priority, snoozes, wait_signal, wait_since, wait_until,
       resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason, unique_for, finished_at
FROM adk_work INDEXED BY adk_work_finished
WHERE queue = ?1 AND finished_at <> 0 AND (finished_at, tenant, id) < (?2, ?3, ?4)
  AND (?5 = '' OR tenant = ?5) AND (?6 = '' OR state = ?6) AND (?7 = '' OR id = ?7)
  AND finished_at >= ?8 AND finished_at < ?9
ORDER BY finished_at DESC, tenant DESC, id DESC LIMIT ?10
