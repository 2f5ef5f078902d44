-- Counts ?2 more (or fewer) finished items of the queue, when it has a
-- retention row.
UPDATE adk_retention SET finished = max(finished + ?2, 0) WHERE queue = ?1
