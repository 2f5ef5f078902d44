-- Extend a live lease under a new token: $1 queue, $2 tenant, $3 id,
-- $4 the token held, $5 new expiry, $6 now. Only the lease columns
-- change and none of them is indexed, so this is a HOT update. A lease
-- whose cancel is pending (cancelled_at) is not extended: the queue then
-- settles the cancel (cancel_settle.sql).
UPDATE {work}
SET lease_expires_at = $5, token = nextval('{work}_token_seq'),
    heartbeats = heartbeats + (SELECT count(*) FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0)
WHERE queue = $1 AND tenant = $2 AND id = $3 AND state = 'leased' AND token = $4 AND lease_expires_at > $6
  AND cancelled_at IS NULL
RETURNING {item_columns}
