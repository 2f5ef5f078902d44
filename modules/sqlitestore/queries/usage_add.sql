INSERT INTO adk_usage (queue, tenant, start_ms, cost_micros, tokens) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (queue, tenant, start_ms) DO UPDATE SET
    cost_micros = cost_micros + excluded.cost_micros, tokens = tokens + excluded.tokens
