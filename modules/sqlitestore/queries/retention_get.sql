-- The queue's retention and its count of finished items.
SELECT age, count, events, finished FROM adk_retention WHERE queue = ?1
