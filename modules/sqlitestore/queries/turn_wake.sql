UPDATE adk_turns SET wake_at = ?3 WHERE queue = ?1 AND tenant = ?2
