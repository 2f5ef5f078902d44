-- Lock a lease that still holds its token, before a Fail: $1 queue,
-- $2 tenant, $3 id, $4 token. No row: the lease was lost.
SELECT attempts
FROM {work}
WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'leased' AND token = $4
FOR UPDATE
