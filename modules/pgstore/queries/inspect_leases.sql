-- Live leases of a queue, soonest expiry first: $1 queue, $2 after this
-- expiry, $3 and this token, $4 rows.
SELECT {item_columns}
FROM {work}
WHERE queue = $1 AND state = 'leased' AND (lease_expires_at, token) > ($2, $3)
ORDER BY lease_expires_at, token
LIMIT $4
