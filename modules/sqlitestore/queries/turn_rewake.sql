-- A queued item of the tenant left the queue other than by a claim (a
-- cancel): its wake time is its first queued item's due time again
-- (NULL when it holds none: it leaves the rotation, unranked).
WITH w(at) AS (
    SELECT min(due_at) FROM (
        SELECT min(due_at) AS due_at FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority = 0
        UNION ALL
        SELECT min(due_at) FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority <> 0
    )
)
UPDATE adk_turns SET wake_at = (SELECT at FROM w), ranked = CASE WHEN (SELECT at FROM w) IS NULL THEN 0 ELSE ranked END
WHERE queue = ?1 AND tenant = ?2
