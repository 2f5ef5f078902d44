-- Park a lease locked by lease_lock.sql until a signal or its timeout:
-- $1 queue, $2 tenant, $3 id, $4 token, $5 signal, $6 now, $7 timeout.
-- The lease ends and no attempt is charged. due_at becomes the timeout:
-- a claim that finds a wait of its queue due runs wait_timeouts.sql.
UPDATE {work}
SET state = 'waiting', wait_signal = $5, wait_since = $6, wait_until = $7, due_at = $7,
    seq = nextval('{work}_seq'), worker = NULL, lease_expires_at = NULL, token = NULL
WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'leased' AND token = $4
