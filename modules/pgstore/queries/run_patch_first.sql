-- The first try of a patch that keeps a version (run_patch_keep.sql, in
-- its parameters), without the row lock: old is the run as the
-- statement's snapshot holds it, and the update lands only on that very
-- row (its ctid; an update of a row a concurrent write replaced is
-- re-checked on the newest one, and must still be at old's version), so
-- the version kept is the row replaced. When the run moved on after the
-- snapshot, nothing is written and old is returned passing every check:
-- the caller then sends run_patch_keep.sql, which locks the row. An old
-- that fails a check (a fence above $10, a sum past the bigint range) is
-- the run of one instant inside the call at which the patch is refused,
-- as in run_patch.sql. Rows come back as in run_patch_keep.sql; no row:
-- the run did not exist at the snapshot. Without the lock the patch
-- writes no tuple lock (a WAL record, and a second exclusive lock of the
-- run's page) and probes the primary key once.
WITH old AS (
  SELECT {run_columns}, status <> $8::text AS keeps, ctid AS tid
  FROM {runs}
  WHERE tenant = $1 AND id = $2
), written AS (
  UPDATE {runs} x
  SET input_tokens  = old.input_tokens + $3::bigint,
      output_tokens = old.output_tokens + $4::bigint,
      cost_micros   = old.cost_micros + $5::bigint,
      iterations    = old.iterations + $6::bigint,
      cursor        = old.cursor + $7::bigint,
      status        = $8,
      version       = old.version + 1,
      updated_at    = $9,
      fence         = greatest(old.fence, $10::bigint)
  FROM old
  WHERE x.ctid = old.tid AND x.version = old.version
    AND ($10::bigint = 0 OR old.fence <= $10::bigint)
    AND old.input_tokens::numeric + $3::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.output_tokens::numeric + $4::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.cost_micros::numeric + $5::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.iterations::numeric + $6::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND old.cursor::numeric + $7::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
  RETURNING {x_run_columns}
), {keep_version}
SELECT true, * FROM written
UNION ALL
SELECT false, {run_columns} FROM old WHERE NOT EXISTS (SELECT 1 FROM written)
