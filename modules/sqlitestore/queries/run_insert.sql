-- Creates the run with the write's fence, or nothing when the tenant
-- already has one of that id.
INSERT INTO adk_runs (tenant, id, session, status, data, version, created_at, updated_at, fence)
VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?6, ?7)
ON CONFLICT (tenant, id) DO NOTHING
RETURNING tenant, id, seq, session, status, data, version,
          input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
