-- What an enqueue that found its id taken reads of the item there.
SELECT state, unique_until FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3
