-- Takes ?2 numbers of the queue's log at once and returns the last.
UPDATE adk_retention SET log_seq = log_seq + ?2 WHERE queue = ?1 RETURNING log_seq
