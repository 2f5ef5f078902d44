-- Settle leases whose cancel is pending: $1..$4 parallel arrays (queue,
-- tenant, id, token), $5 whether only a live lease counts (Heartbeat),
-- $6 now. Each row still leased under its token and marked (cancelled_at
-- set by Cancel) becomes cancelled; nothing the holder asked for is
-- written, and no attempt is charged. Returns the keys settled.
UPDATE {work} w
SET state = 'cancelled', worker = NULL, lease_expires_at = NULL, token = NULL
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
  AND w.state = 'leased' AND w.token = l.token AND w.cancelled_at IS NOT NULL
  AND (NOT $5::boolean OR w.lease_expires_at > $6::timestamptz)
RETURNING w.queue, w.tenant, w.id
