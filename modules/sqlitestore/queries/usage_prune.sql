-- Forgets the tenant's charges whose slot started before ?3: outside any
-- window that could still count them.
DELETE FROM adk_usage WHERE queue = ?1 AND tenant = ?2 AND start_ms < ?3
