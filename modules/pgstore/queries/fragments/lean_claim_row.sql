-- The kind of the lean claim's marker row (claim.sql rendered without
-- events and priority ranges), which the row's condition also makes true
-- when the queue records events or holds a queued item with a priority:
-- the lean claim's rotation is then empty, nothing was claimed, and the
-- row says to claim with the full statement ('full'), or, when the queue
-- needs nothing the full claim has, that it has limits or pauses
-- ('limited'). A queue that has both is claimed with the full claim
-- first, which then says 'limited'. Queries name it {lean_claim_row}.
CASE WHEN {lean_claim_needs} THEN 'full' ELSE 'limited' END
