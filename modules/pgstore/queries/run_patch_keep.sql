-- A patch that sets the status, on a store that keeps versions, after its
-- first try (run_patch_first.sql) wrote nothing (the run moved on, is
-- missing, or refuses the patch), in the parameters of run_patch.sql: $1
-- tenant, $2 id, $3..$7 the counter deltas, $8 the status (not ''), $9
-- now, $10 the fence (0: unfenced).
-- The run as it was is kept as a version when the status changes
-- (keep_version.sql). The run's row is locked first (old), so the checks
-- (fence, then the sums, in numeric) are made on the newest row, the
-- version kept is that row, and concurrent patches still all land (each
-- waits for the lock and adds to the row the one before committed). Rows
-- come back as (written, run columns): the run as written, or old, the
-- run that refused the patch. No row: the run did not exist. It prunes
-- nothing: a patch that leaves the run at a Version that is a multiple
-- of pruneEvery sends run_versions_prune.sql after it (versions.go).
WITH old AS (
  SELECT {run_columns}, status <> $8::text AS keeps
  FROM {runs}
  WHERE tenant = $1 AND id = $2
  FOR UPDATE
), written AS (
  UPDATE {runs} x
  SET input_tokens  = o.input_tokens + $3::bigint,
      output_tokens = o.output_tokens + $4::bigint,
      cost_micros   = o.cost_micros + $5::bigint,
      iterations    = o.iterations + $6::bigint,
      cursor        = o.cursor + $7::bigint,
      status        = $8,
      version       = o.version + 1,
      updated_at    = $9,
      fence         = greatest(o.fence, $10::bigint)
  FROM old o
  WHERE x.tenant = $1 AND x.id = $2
    AND ($10::bigint = 0 OR o.fence <= $10::bigint)
    AND o.input_tokens::numeric + $3::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.output_tokens::numeric + $4::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.cost_micros::numeric + $5::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.iterations::numeric + $6::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.cursor::numeric + $7::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
  RETURNING {x_run_columns}, o.keeps AS o_keeps, {old_columns}
), {keep_version}
SELECT true, {run_columns} FROM written
UNION ALL
SELECT false, {run_columns} FROM old WHERE NOT EXISTS (SELECT 1 FROM written)
