-- Park the locked tenants until their earliest queued item is due
-- ('infinity' when they hold none): $1 queue, $2 tenants, $3 now. A
-- statement of its own, so its snapshot is taken after the locks: every
-- writer that could make one of their items due has either committed (and
-- is seen here) or waits behind the lock and lowers wake_at itself. A
-- tenant with an item due by now is left as it is.
UPDATE {turns} t
SET wake_at = n.wake_at,
    -- A tenant that holds no queued item has left the rotation for flow
    -- control: when it comes back its weight's turn starts afresh.
    credit = CASE WHEN n.wake_at = 'infinity' THEN 0 ELSE t.credit END
FROM (
    SELECT l.tenant,
           coalesce((SELECT {first_due} FROM (SELECT l.tenant) ft), 'infinity') AS wake_at
    FROM unnest($2::text[]) AS l(tenant)
) n
WHERE t.queue = $1 AND t.tenant = n.tenant AND n.wake_at > $3 AND t.wake_at <> n.wake_at
