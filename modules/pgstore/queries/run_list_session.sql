-- One page of a session's runs by seq: $1 tenant, $2 session, $3 after
-- this seq, $4 rows.
SELECT tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at
FROM {runs}
WHERE tenant = $1 AND session = $2 AND seq > $3
ORDER BY seq
LIMIT $4
