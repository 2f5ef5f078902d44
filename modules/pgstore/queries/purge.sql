-- Delete matching dead letters: $1 queue, $2 tenant ('' any), $3 id ('' any),
-- $4 error substring ('' any). Their events go with them. Returns how
-- many went.
--
-- The rows are locked first in key order (queue, tenant, id), as
-- requeue.sql and cancel_matching.sql lock theirs, so none of them can
-- wait on another in a cycle.
WITH locked AS MATERIALIZED (
    SELECT queue, tenant, id FROM {work}
    WHERE {dead_match}
    ORDER BY queue, tenant, id
    FOR UPDATE
),
gone AS (
    DELETE FROM {work} w
    USING locked l
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
    RETURNING w.queue, w.tenant, w.id, w.events
),
gone_events AS (
    DELETE FROM {work}_events x
    USING gone g
    WHERE g.events > 0 AND x.queue = g.queue AND x.tenant = g.tenant AND x.id = g.id
)
SELECT count(*) FROM gone
