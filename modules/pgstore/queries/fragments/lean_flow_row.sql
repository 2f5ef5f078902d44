-- The lean flow claim's last row (claim_flow.sql rendered without events
-- and priority ranges): the queue records events or holds a queued item
-- with a priority, so the lean claim's rotation was empty, nothing was
-- claimed, and this row says which ('prio', 'events' or 'full' for both:
-- fragments/lean_claim_row.sql); the full flow claim serves either.
-- Queries name it {lean_flow_row}.
UNION ALL
SELECT {lean_claim_row}, '', NULL, NULL, NULL, NULL, NULL, NULL
WHERE {lean_claim_needs}
