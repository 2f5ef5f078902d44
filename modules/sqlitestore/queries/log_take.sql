-- Takes the next number of the queue's log.
UPDATE adk_retention SET log_seq = log_seq + 1 WHERE queue = ?1 RETURNING log_seq
