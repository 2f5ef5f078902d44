-- Wake the sleeping tenants of queue ?1 whose wake time has come by ?2,
-- so that the walk of adk_turns_order that follows in the claim's
-- transaction meets them, at the stamp they kept while asleep. Run when
-- queue_get.sql found one.
UPDATE adk_turns SET asleep = 0 WHERE queue = ?1 AND asleep = 1 AND wake_at <= ?2
