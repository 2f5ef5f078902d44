-- Lock one item before a Cancel and return its state: $1 queue, $2
-- tenant, $3 id. No row: the item is unknown.
SELECT state
FROM {work}
WHERE queue = $1 AND tenant = $2 AND id = $3
FOR UPDATE
