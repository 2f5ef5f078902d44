-- For a tenant a lease of which just ended: the cap that applies to it
-- (its own row's, else the queue default's; 0 for none), whether it has
-- an item due at ?3, and, when both, its live leases at ?3 (from the
-- queue's index of leases by expiry).
SELECT c.cap, c.due,
       CASE WHEN c.cap > 0 AND c.due THEN
           (SELECT count(*) FROM adk_work
            WHERE queue = ?1 AND state = 'leased' AND lease_expires_at > ?3 AND tenant = ?2)
       ELSE 0 END
FROM (SELECT coalesce((SELECT max_leased FROM adk_limits WHERE queue = ?1 AND tenant = ?2),
                      (SELECT max_leased FROM adk_limits WHERE queue = ?1 AND tenant = ''), 0) AS cap,
             EXISTS (SELECT 1 FROM adk_turns WHERE queue = ?1 AND tenant = ?2 AND wake_at <= ?3) AS due) c
