-- A ranked tenant's next wake when it has no more than one item due (and
-- any tenant's after a cancel): the first due time of its queued items
-- other than ?3 (the one it is served; '' for none), found level by level
-- of priority, two probes of the ready index per priority in use, never a
-- walk of its items.
WITH RECURSIVE lv(p) AS (
    SELECT max(priority) FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND state = 'queued'
    UNION ALL
    SELECT (SELECT max(priority) FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority < lv.p)
    FROM lv WHERE lv.p IS NOT NULL
)
SELECT min((SELECT min(due_at) FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority = lv.p AND id <> ?3))
FROM lv WHERE lv.p IS NOT NULL
