-- Lock a chunk of the queue's expired leases: $1 queue, $2 now, $3 rows.
-- A lease being heartbeated right now is skipped; if its heartbeat
-- commits first, the re-checked expiry keeps it out.
SELECT tenant, id, token, attempts
FROM {work}
WHERE queue = $1 AND state = 'leased' AND lease_expires_at <= $2
ORDER BY lease_expires_at
LIMIT $3
FOR UPDATE SKIP LOCKED
