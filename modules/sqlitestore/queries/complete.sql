-- Deletes a leased item whose token matches, unless a cancel marked it.
DELETE FROM adk_work WHERE queue = ? AND tenant = ? AND id = ? AND state = 'leased' AND token = ? AND cancelled_at = 0
