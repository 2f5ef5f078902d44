UPDATE adk_turns SET wake_at = ?3, ranked = CASE WHEN ?3 IS NULL THEN 0 ELSE ranked END WHERE queue = ?1 AND tenant = ?2
