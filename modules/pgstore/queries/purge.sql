-- Delete matching dead letters: $1 queue, $2 tenant ('' any), $3 id ('' any),
-- $4 error substring ('' any). Their events go with them. Returns how
-- many went.
WITH gone AS (
    DELETE FROM {work}
    WHERE {dead_match}
    RETURNING queue, tenant, id, events
),
gone_events AS (
    DELETE FROM {work}_events x
    USING gone g
    WHERE g.events > 0 AND x.queue = g.queue AND x.tenant = g.tenant AND x.id = g.id
)
SELECT count(*) FROM gone
