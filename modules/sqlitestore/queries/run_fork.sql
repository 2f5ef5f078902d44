-- Creates a run from a version of another: its session, status, data and
-- counters, version 1 and no fence; nothing when the tenant already has a
-- run of that id.
INSERT INTO adk_runs (tenant, id, session, status, data, version,
                      input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8, ?9, ?10, ?11, ?11)
ON CONFLICT (tenant, id) DO NOTHING
RETURNING tenant, id, seq, session, status, data, version,
          input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
