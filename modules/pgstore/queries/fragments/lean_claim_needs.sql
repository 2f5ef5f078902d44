-- What the lean claim (claim.sql rendered without events and priority
-- ranges) cannot serve: a queue that records events (ret) or holds a
-- queued item with a priority. Queries name it {lean_claim_needs}; it is
-- a boolean expression.
(EXISTS (SELECT 1 FROM ret) OR {queued_priority})
