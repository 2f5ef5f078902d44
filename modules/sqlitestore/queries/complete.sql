DELETE FROM adk_work WHERE queue = ? AND tenant = ? AND id = ? AND state = 'leased' AND token = ?
