-- Take the shared side of the turn lock (see turns_share.sql) of every
-- tenant with a dead letter matching a requeue's filter, and return them:
-- $1 queue, $2 tenant ('' any), $3 id ('' any), $4 error substring ('' any).
SELECT d.tenant
FROM (
    SELECT DISTINCT tenant
    FROM {work}
    WHERE {dead_match}
) d
CROSS JOIN LATERAL (
    SELECT pg_advisory_xact_lock_shared(hashtext('{turns}'), hashtext($1 || chr(31) || d.tenant))
) l
ORDER BY d.tenant
