SELECT tenant, id, worker, at FROM adk_recent WHERE queue = ? ORDER BY turn DESC LIMIT ?
