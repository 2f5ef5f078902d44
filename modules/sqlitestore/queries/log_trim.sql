-- Drops the queue's log entries numbered ?2 and below.
DELETE FROM adk_event_log WHERE queue = ?1 AND seq <= ?2
