-- The lean flow claim's last row (claim_flow.sql rendered without events
-- and priority ranges): the queue records events or holds a queued item
-- with a priority, so the lean claim's rotation was empty, nothing was
-- claimed, and this row says to claim with the full statement. Queries
-- name it {lean_flow_row}.
UNION ALL
SELECT 'full', '', NULL, NULL, NULL, NULL, NULL, NULL
WHERE {lean_claim_needs}
