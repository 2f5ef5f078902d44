-- One item: $1 queue, $2 tenant, $3 id.
SELECT {item_columns}
FROM {work}
WHERE queue = $1 AND tenant = $2 AND id = $3
