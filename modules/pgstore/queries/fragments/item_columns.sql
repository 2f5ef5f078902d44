-- The columns of an item, in the order scanLease reads them, for a
-- query whose FROM is the work table alone (claim statements, which
-- join, name them with the table's alias). Queries name it
-- {item_columns}.
queue, tenant, id, state, payload, metadata, not_before, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token,
priority, snoozes, wait_signal, wait_since, wait_until, resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason,
unique_for_us, finished_at
