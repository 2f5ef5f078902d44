-- Takes n values of a counter ('token' or 'seq') and returns the last.
UPDATE adk_counters SET value = value + ?2 WHERE name = ?1 RETURNING value
