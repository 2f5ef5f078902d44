-- claim_next.sql for a ranked tenant: the item to serve (head 1: its first
-- item due at ?3 by priority, due time and order), then the two first by
-- due time of priority 0 and of the others (head 0), where its next wake
-- comes from once the served item is gone. A not yet due item of a
-- higher priority is stepped over, never served early.
SELECT id, due_at, 1 FROM (
    SELECT id, due_at FROM adk_work INDEXED BY adk_work_ready
    WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND due_at <= ?3
    ORDER BY priority DESC, due_at, seq LIMIT 1)
UNION ALL
SELECT id, due_at, 0 FROM (
    SELECT id, due_at FROM adk_work
    WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority = 0
    ORDER BY due_at, seq LIMIT 2)
UNION ALL
SELECT id, due_at, 0 FROM (
    SELECT id, due_at FROM adk_work INDEXED BY adk_work_ranked
    WHERE queue = ?1 AND tenant = ?2 AND state = 'queued' AND priority <> 0
    ORDER BY due_at, seq LIMIT 2)
