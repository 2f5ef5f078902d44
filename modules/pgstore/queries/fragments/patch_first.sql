-- The CTE written of the first try of a status patch that keeps a
-- version (run_patch_first.sql says why it holds), opening a WITH clause,
-- in the parameters of run_patch.sql: $1 tenant, $2 id, $3..$7 the
-- counter deltas, $8 the status (not ''), $9 now, $10 the fence (0:
-- unfenced). It takes no lock before the update: the update joins the run
-- as the statement's snapshot holds it (o), checks the fence and the sums
-- on it, and lands only on o's own row (its ctid) while that row is still
-- at o's version (an update of a row a concurrent write replaced is
-- re-checked on the newest one, which is then at another version). It
-- returns the run as written, o_keeps (the status changes) and o's
-- columns ({old_columns}) for keep_version.sql. Queries name it
-- {patch_first}.
written AS (
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
  FROM {runs} o
  WHERE o.tenant = $1 AND o.id = $2 AND x.ctid = o.ctid AND x.version = o.version
    AND ($10::bigint = 0 OR o.fence <= $10::bigint)
    AND o.input_tokens::numeric + $3::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.output_tokens::numeric + $4::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.cost_micros::numeric + $5::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.iterations::numeric + $6::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND o.cursor::numeric + $7::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
  RETURNING {x_run_columns}, o.status <> $8::text AS o_keeps, {old_columns}
)
