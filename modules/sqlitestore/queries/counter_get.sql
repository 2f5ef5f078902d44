SELECT value FROM adk_counters WHERE name = ?
