-- The served tenant goes to the back, waking when its next item is due
-- (NULL: it holds no queued item and leaves the rotation, unranked),
-- asleep till then when that is after ?5, now.
UPDATE adk_turns SET stamp = ?3, wake_at = ?4, served = served + 1, ranked = CASE WHEN ?4 IS NULL THEN 0 ELSE ranked END,
    asleep = coalesce(?4 > ?5, 0)
WHERE queue = ?1 AND tenant = ?2
