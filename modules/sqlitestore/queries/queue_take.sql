-- Takes n stamps and m turns of the queue's counters (creating its row)
-- and returns the last of each.
INSERT INTO adk_queues (queue, stamp, turn) VALUES (?1, ?2, ?3)
ON CONFLICT (queue) DO UPDATE SET stamp = stamp + ?2, turn = turn + ?3
RETURNING stamp, turn
