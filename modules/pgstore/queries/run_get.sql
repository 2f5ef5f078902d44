-- $1 tenant, $2 id.
SELECT tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at
FROM {runs}
WHERE tenant = $1 AND id = $2
