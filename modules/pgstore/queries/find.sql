-- Find: $1 queue, $2 id, $3 limit. The items with this ID, by tenant,
-- through the primary key alone: a loose walk of the queue's tenants (one
-- descent per tenant), each probed for the ID. It reads no item of
-- another ID, and writes nothing that would cost the claim path an index.
WITH RECURSIVE t(tn) AS (
    (SELECT w.tenant FROM {work} w WHERE w.queue = $1 ORDER BY w.tenant LIMIT 1)
    UNION ALL
    SELECT (SELECT w.tenant FROM {work} w WHERE w.queue = $1 AND w.tenant > t.tn ORDER BY w.tenant LIMIT 1)
    FROM t WHERE t.tn IS NOT NULL
)
SELECT {item_columns}
FROM {work}
WHERE queue = $1 AND id = $2 AND tenant IN (SELECT tn FROM t WHERE tn IS NOT NULL)
ORDER BY tenant
LIMIT $3
