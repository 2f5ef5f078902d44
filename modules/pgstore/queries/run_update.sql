-- Optimistic put: $1 tenant, $2 id, $3 session, $4 status, $5 data,
-- $6 now, $7 the version the caller holds. No row comes back when the
-- stored version differs.
UPDATE {runs}
SET session = $3, status = $4, data = $5, version = version + 1, updated_at = $6
WHERE tenant = $1 AND id = $2 AND version = $7
RETURNING tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at
