-- The queue's cap of events per item (0: it records none).
SELECT coalesce((SELECT events FROM adk_retention WHERE queue = ?1), 0)
