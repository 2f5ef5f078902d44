-- The columns of a run, in the order scanRun reads them. Queries name it
-- {run_columns}.
tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
