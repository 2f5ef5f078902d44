-- A tenant's wake time set to ?3, the due time of its first queued item
-- (NULL: it holds none and leaves the rotation, unranked), asleep while
-- that is after ?4, now.
UPDATE adk_turns SET wake_at = ?3, ranked = CASE WHEN ?3 IS NULL THEN 0 ELSE ranked END, asleep = coalesce(?3 > ?4, 0)
WHERE queue = ?1 AND tenant = ?2
