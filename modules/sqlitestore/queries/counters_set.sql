UPDATE adk_counters SET value = ?2 WHERE name = ?1
