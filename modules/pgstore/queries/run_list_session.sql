-- One page of a session's runs by seq: $1 tenant, $2 session, $3 after
-- this seq, $4 rows.
SELECT {run_columns}
FROM {runs}
WHERE tenant = $1 AND session = $2 AND seq > $3
ORDER BY seq
LIMIT $4
