-- What a lean claim's marker row says the queue needs (claim.sql and
-- claim_flow.sql rendered without events and priority ranges): 'full'
-- when it holds a queued item with a priority and records events,
-- 'prio' or 'events' when one of them. The lean claim's rotation is then
-- empty and nothing was claimed. claim.sql's row holds it when its
-- condition was one of those, and says otherwise that the queue has
-- limits or pauses ('limited'); a queue that has both is claimed with the
-- rendering it needs first, which then says 'limited'. Queries name it
-- {lean_claim_row}.
CASE WHEN {queued_priority} THEN CASE WHEN EXISTS (SELECT 1 FROM ret) THEN 'full' ELSE 'prio' END
     WHEN EXISTS (SELECT 1 FROM ret) THEN 'events' ELSE 'limited' END
