-- A wait of the queue times out at ?2: the claim looks for timed-out
-- waits from then on.
UPDATE adk_queues SET wait_next = CASE WHEN wait_next IS NULL OR ?2 < wait_next THEN ?2 ELSE wait_next END WHERE queue = ?1
