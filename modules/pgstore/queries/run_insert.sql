-- Create a run at version 1: $1 tenant, $2 id, $3 session, $4 status,
-- $5 data, $6 now. No row comes back when the run exists.
INSERT INTO {runs} (tenant, id, session, status, data, version, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, 1, $6, $6)
ON CONFLICT (tenant, id) DO NOTHING
RETURNING tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at
