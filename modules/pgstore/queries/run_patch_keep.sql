-- A patch that sets the status, on a store that keeps versions: the run
-- as it was is kept as a version when the status changes (keep_version.sql
-- takes $1..$5: tenant, id, versions kept, age cut, prune batch). $6..$10
-- the counter deltas, $11 the status (not ''), $12 now, $13 the fence
-- (0: unfenced). The run's row is locked first (old), as in
-- run_update_keep.sql, so the checks (fence, then the sums, in numeric)
-- are made on the newest row, the version kept is that row, and
-- concurrent patches still all land (each waits for the lock and adds to
-- the row the one before committed). Rows come back as (written, run
-- columns): the run as written, or old, the run that refused the patch.
-- No row: the run did not exist.
WITH old AS (
  SELECT {run_columns}, status <> $11::text AS keeps
  FROM {runs}
  WHERE tenant = $1 AND id = $2
  FOR UPDATE
), written AS (
  UPDATE {runs} x
  SET input_tokens  = old.input_tokens + $6::bigint,
      output_tokens = old.output_tokens + $7::bigint,
      cost_micros   = old.cost_micros + $8::bigint,
      iterations    = old.iterations + $9::bigint,
      cursor        = old.cursor + $10::bigint,
      status        = $11,
      version       = old.version + 1,
      updated_at    = $12,
      fence         = greatest(old.fence, $13::bigint)
  FROM old
  WHERE x.tenant = $1 AND x.id = $2
    AND ($13::bigint = 0 OR old.fence <= $13::bigint)
    AND old.input_tokens::numeric + $6::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.output_tokens::numeric + $7::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.cost_micros::numeric + $8::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.iterations::numeric + $9::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.cursor::numeric + $10::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
  RETURNING {x_run_columns}
), {keep_version}
SELECT true, * FROM written
UNION ALL
SELECT false, {run_columns} FROM old WHERE NOT EXISTS (SELECT 1 FROM written)
