-- Lock a chunk of the queue's expired leases: $1 queue, $2 now, $3 rows.
-- A lease being heartbeated right now is skipped; if its heartbeat
-- commits first, the re-checked expiry keeps it out. A marked lease (its
-- cancel pending) is cancelled, not retried.
SELECT tenant, id, token, attempts, cancelled_at IS NOT NULL AS marked
FROM {work}
WHERE queue = $1 AND state = 'leased' AND lease_expires_at <= $2
ORDER BY lease_expires_at
LIMIT $3
FOR UPDATE SKIP LOCKED
