-- Delete a queue's items cancelled before a time: $1 queue, $2 before.
DELETE FROM {work}
WHERE queue = $1 AND state = 'cancelled' AND cancelled_at < $2
