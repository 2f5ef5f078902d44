-- One page of a tenant's runs by seq: $1 tenant, $2 after this seq,
-- $3 rows (one more than the page, to tell whether another follows).
SELECT tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at
FROM {runs}
WHERE tenant = $1 AND seq > $2
ORDER BY seq
LIMIT $3
