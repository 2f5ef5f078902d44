-- One page of a queue's waiting items, longest waiting first (seq is
-- drawn when the wait begins): $1 queue, $2 after this seq, $3 rows.
SELECT {item_columns}, seq
FROM {work}
WHERE queue = $1 AND state = 'waiting' AND seq > $2
ORDER BY seq
LIMIT $3
