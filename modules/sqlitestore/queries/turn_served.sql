-- The served tenant goes to the back, waking when its next item is due
-- (NULL: it holds no queued item and leaves the rotation).
UPDATE adk_turns SET stamp = ?3, wake_at = ?4, served = served + 1 WHERE queue = ?1 AND tenant = ?2
