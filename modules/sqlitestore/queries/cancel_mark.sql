-- Marks a lease for cancelling at ?4 for reason ?5; a marked lease keeps
-- its first mark.
UPDATE adk_work SET cancelled_at = ?4, cancel_reason = ?5
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state = 'leased' AND cancelled_at = 0
