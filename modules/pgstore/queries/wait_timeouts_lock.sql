-- Take the shared side of the turn lock (see turns_share.sql) of every
-- tenant of a queue with a wait that timed out, and return them: $1
-- queue, $2 now.
SELECT d.tenant
FROM (
    SELECT DISTINCT tenant
    FROM {work}
    WHERE queue = $1 AND state = 'waiting' AND due_at <= $2
) d
CROSS JOIN LATERAL (
    SELECT pg_advisory_xact_lock_shared(hashtext('{turns}'), hashtext($1 || chr(31) || d.tenant))
) l
ORDER BY d.tenant
