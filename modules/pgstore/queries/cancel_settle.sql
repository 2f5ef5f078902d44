-- Settle leases whose cancel is pending: $1..$4 parallel arrays (queue,
-- tenant, id, token), $5 whether only a live lease counts (Heartbeat),
-- $6 now. Each row still leased under its token and marked (cancelled_at
-- set by Cancel) becomes cancelled; nothing the holder asked for is
-- written, and no attempt is charged. Returns the keys settled.
-- The cancelled item gets its finished_at (now) and, when its queue
-- records events, its cancelled event.
WITH ret AS (
    SELECT r.queue, r.events AS keep FROM {work}_retention r WHERE r.queue = ANY ($1::text[]) AND r.events > 0
),
settled AS (
    UPDATE {work} w
    SET state = 'cancelled', worker = NULL, lease_expires_at = NULL, token = NULL, finished_at = $6::timestamptz,
        events = w.events + (SELECT count(*)::integer FROM ret r WHERE r.queue = w.queue)
    FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
      AND w.state = 'leased' AND w.token = l.token AND w.cancelled_at IS NOT NULL
      AND (NOT $5::boolean OR w.lease_expires_at > $6::timestamptz)
    RETURNING w.queue, w.tenant, w.id, w.events, w.cancel_reason
),
ev AS (
    SELECT s.queue, s.tenant, s.id, s.events AS n, r.keep, true AS item, 'cancelled' AS kind, $6::timestamptz AS at, NULL AS worker,
           NULL AS attempt, NULL AS token, NULL AS error, NULL AS next_due, NULL AS signal, s.cancel_reason AS reason, NULL AS run_time_us
    FROM settled s JOIN ret r ON r.queue = s.queue
),
{record_events}
SELECT queue, tenant, id FROM settled
