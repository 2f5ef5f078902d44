-- The CTE kept of a write that keeps a version (after the CTEs old, the
-- run's row with a column keeps, and written, the update), continuing its
-- WITH clause: the run as it was before the write (old) is kept as a
-- version when the write wrote and old.keeps holds. Pruning is apart
-- (prune_versions.sql): a run's writes prune once in pruneEvery (see
-- versions.go). Queries name it {keep_version}.
kept AS (
  INSERT INTO {runs}_versions (tenant, id, version, session, status, data, input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
  SELECT old.tenant, old.id, old.version, old.session, old.status, old.data, old.input_tokens, old.output_tokens, old.cost_micros, old.iterations, old.cursor, old.fence, old.updated_at
  FROM old
  WHERE EXISTS (SELECT 1 FROM written) AND old.keeps
  RETURNING version
)
