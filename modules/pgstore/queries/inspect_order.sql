-- Tenants with queued work, in the order claims will serve them: $1
-- queue, $2 now. Those with an item due by now come first, in turn order;
-- the rest follow in the order their first items fall due. Each tenant's
-- first item is two ordered probes, one of each ready index
-- (fragments/first_due.sql).
SELECT o.tenant
FROM (
  SELECT t.tenant, t.turn_batch, t.turn_pos,
         (SELECT {first_due} FROM (SELECT t.tenant) ft) AS first_due
  FROM {turns} t
  WHERE t.queue = $1
) o
WHERE o.first_due IS NOT NULL
ORDER BY o.first_due > $2,
         CASE WHEN o.first_due > $2 THEN o.first_due END,
         o.turn_batch, o.turn_pos, o.tenant
