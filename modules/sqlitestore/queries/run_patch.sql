-- Adds the deltas; the caller has checked, in the same transaction, the
-- fence (?10) and that every sum fits. An empty status leaves the stored
-- one.
UPDATE adk_runs SET
    input_tokens = input_tokens + ?3, output_tokens = output_tokens + ?4,
    cost_micros = cost_micros + ?5, iterations = iterations + ?6, cursor = cursor + ?7,
    status = CASE WHEN ?8 = '' THEN status ELSE ?8 END,
    version = version + 1, updated_at = ?9, fence = max(fence, ?10)
WHERE tenant = ?1 AND id = ?2
RETURNING tenant, id, seq, session, status, data, version,
          input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
