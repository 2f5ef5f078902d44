DELETE FROM adk_runs WHERE tenant = ? AND id = ?
