-- Turn rows that a claim's first round still visits although their
-- tenant has nothing due: $1 queue, $2 now, $3 rows. Each tenant's
-- earliest item (fragments/first_due.sql) is two scalar subqueries, each
-- walking one ready index in order (ORDER BY, LIMIT 1; with the claim's
-- settings no plan may sort instead), so it stays two index probes per
-- tenant whatever the statistics say. As NOT EXISTS or min() it was
-- planned on a freshly loaded table as a scan of the whole queue, or of
-- the tenant's items, per tenant: 335 ms and 13 ms for 50 tenants,
-- against 0.3 ms.
SELECT t.tenant
FROM {turns} t
WHERE t.queue = $1 AND t.wake_at <= $2
  AND coalesce((SELECT {first_due} FROM (SELECT t.tenant) ft), 'infinity') > $2
ORDER BY t.tenant
LIMIT $3
