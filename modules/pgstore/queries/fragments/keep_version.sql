-- The CTE kept of a write that keeps a version, continuing its WITH
-- clause after the CTE written: the update, returning the run as written
-- ({x_run_columns}), o_keeps (whether the write keeps a version) and the
-- row it replaced ({old_columns}). That row is kept as a version when the
-- write wrote and o_keeps holds. Pruning is apart (prune_versions.sql): a
-- run's writes prune once in pruneEvery (see versions.go). Queries name it
-- {keep_version}.
kept AS (
  INSERT INTO {runs}_versions (tenant, id, version, session, status, data, input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
  SELECT tenant, id, o_version, o_session, o_status, o_data, o_input_tokens, o_output_tokens, o_cost_micros, o_iterations, o_cursor, o_fence, o_updated_at
  FROM written
  WHERE o_keeps
  RETURNING version
)
