-- Whether a tenant is in the rotation (it holds a queued item: wake_at is
-- set), and if so whether an item due at ?3, of a priority other than 0
-- when ?4 is 1, leaves its row as it is: it wakes no later and is ranked
-- already when it needs to be. No row: the tenant never held an item.
SELECT wake_at IS NOT NULL, wake_at IS NOT NULL AND wake_at <= ?3 AND ranked >= ?4
FROM adk_turns WHERE queue = ?1 AND tenant = ?2
