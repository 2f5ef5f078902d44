-- The first number kept in the queue's log and the last taken.
SELECT (SELECT min(seq) FROM adk_event_log WHERE queue = ?1), coalesce((SELECT log_seq FROM adk_retention WHERE queue = ?1), 0)
