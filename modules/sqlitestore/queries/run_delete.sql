-- Deletes the run unless its fence is above the delete's (?3, 0 for an
-- unfenced delete).
DELETE FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND (?3 = 0 OR fence <= ?3)
