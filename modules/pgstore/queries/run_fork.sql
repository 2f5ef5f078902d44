-- Fork a run: a new run $6 from version $5 of run $1/$2 ($3 versions the
-- policy keeps, $4 the age cut, as in run_version_get.sql), created at
-- $7. The source is read and the new run inserted in one statement (one
-- snapshot), so inside a caller's transaction the fork commits or rolls
-- back with the rest of it. Rows come back as (outcome, run columns):
-- 1 the new run; 2 the run $6 that already exists, as the snapshot holds
-- it; 3 (the columns zero) the version is not kept. No row: the run $6
-- that refused the insert committed after the snapshot was taken;
-- nothing was written, and the caller sends the statement again.
WITH src AS (
  SELECT s.session, s.status, s.data, s.input_tokens, s.output_tokens, s.cost_micros, s.iterations, s.cursor
  FROM (
    SELECT session, status, data, input_tokens, output_tokens, cost_micros, iterations, cursor
    FROM {runs}
    WHERE tenant = $1 AND id = $2 AND version = $5
    UNION ALL
    SELECT v.session, v.status, v.data, v.input_tokens, v.output_tokens, v.cost_micros, v.iterations, v.cursor
    FROM {runs} r JOIN {runs}_versions v ON v.tenant = r.tenant AND v.id = r.id
    WHERE r.tenant = $1 AND r.id = $2 AND r.version <> $5 AND v.version = $5
      AND $3 > 0 AND v.updated_at > $4 AND v.version > {kept_floor}
  ) s
  LIMIT 1
), written AS (
  INSERT INTO {runs} (tenant, id, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence)
  SELECT $1, $6, session, status, data, 1, input_tokens, output_tokens, cost_micros, iterations, cursor, $7, $7, 0
  FROM src
  ON CONFLICT (tenant, id) DO NOTHING
  RETURNING {run_columns}
), stored AS (
  SELECT {run_columns}
  FROM {runs}
  WHERE tenant = $1 AND id = $6 AND EXISTS (SELECT 1 FROM src) AND NOT EXISTS (SELECT 1 FROM written)
)
SELECT 1, * FROM written
UNION ALL
SELECT 2, * FROM stored
UNION ALL
SELECT 3, '', '', 0::bigint, '', '', NULL::bytea, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint, $7::timestamptz, $7::timestamptz, 0::bigint
WHERE NOT EXISTS (SELECT 1 FROM src)
