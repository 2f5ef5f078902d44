-- Takes ?2 numbers of the queue's log at once and returns the last;
-- counts ?3 more (or fewer) finished items of the queue in the same
-- write (finished_add.sql's count).
UPDATE adk_retention SET log_seq = log_seq + ?2, finished = max(finished + ?3, 0) WHERE queue = ?1 RETURNING log_seq
