-- A tenant served by a claim of a queue with limits or paused tenants:
-- its stamp (new when its turn is over, the same while it has credit
-- left), wake time, turn credit and rate bucket; asleep while the wake
-- time is after ?7, now.
UPDATE adk_turns SET stamp = ?3, wake_at = ?4, served = served + 1, credit = ?5, tat = ?6,
    ranked = CASE WHEN ?4 IS NULL THEN 0 ELSE ranked END, asleep = coalesce(?4 > ?7, 0)
WHERE queue = ?1 AND tenant = ?2
