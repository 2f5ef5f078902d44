-- Sets the queue's retention, counting its finished items anew.
INSERT INTO adk_retention (queue, age, count, events, finished)
VALUES (?1, ?2, ?3, ?4, (SELECT count(*) FROM adk_work WHERE queue = ?1 AND finished_at <> 0))
ON CONFLICT (queue) DO UPDATE SET age = excluded.age, count = excluded.count, events = excluded.events, finished = excluded.finished
