-- The end of a state write statement whose WITH clause begins with a CTE
-- named written (the insert or update, RETURNING {run_columns}): rows
-- (written, run columns), the run as written or, when written holds no
-- row, the stored run as the statement's snapshot holds it (no row: the
-- run did not exist at the snapshot). Queries name it {written_or_stored}.
-- (Fragments do not nest: the columns are those of run_columns.sql.)
), stored AS (
  SELECT tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
  FROM {runs}
  WHERE tenant = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM written)
)
SELECT true, * FROM written
UNION ALL
SELECT false, * FROM stored
