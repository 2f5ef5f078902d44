-- Delete a queue's items cancelled before a time: $1 queue, $2 before.
WITH gone AS (
    DELETE FROM {work}
    WHERE queue = $1 AND state = 'cancelled' AND cancelled_at < $2
    RETURNING queue, tenant, id, events
),
-- Their events go with them.
gone_events AS (
    DELETE FROM {work}_events x
    USING gone g
    WHERE g.events > 0 AND x.queue = g.queue AND x.tenant = g.tenant AND x.id = g.id
)
SELECT count(*) FROM gone
