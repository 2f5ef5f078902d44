-- Replaces the run's session, status and data when it holds the version
-- given and no fence above the write's (?8, 0 for an unfenced write),
-- keeping the higher of the two fences.
UPDATE adk_runs SET session = ?3, status = ?4, data = ?5, version = version + 1, updated_at = ?6, fence = max(fence, ?8)
WHERE tenant = ?1 AND id = ?2 AND version = ?7 AND (?8 = 0 OR fence <= ?8)
RETURNING tenant, id, seq, session, status, data, version,
          input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
