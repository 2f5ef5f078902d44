-- The tenants next in turn among those with an item due: the rotation's
-- front, each with whether it is ranked. Tenants with nothing queued, and
-- sleeping ones (turn_sweep.sql has woken those due by now), are not in
-- the index.
SELECT tenant, ranked FROM adk_turns
WHERE queue = ?1 AND wake_at <= ?2 AND asleep = 0
ORDER BY stamp LIMIT ?3
