SELECT tenant, id, seq, session, status, data, version,
       input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
FROM adk_runs WHERE tenant = ? AND id = ?
