-- One page of a tenant's runs by seq: $1 tenant, $2 after this seq,
-- $3 rows (one more than the page, to tell whether another follows).
SELECT {run_columns}
FROM {runs}
WHERE tenant = $1 AND seq > $2
ORDER BY seq
LIMIT $3
