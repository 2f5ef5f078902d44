-- The CTEs old and written of a put that keeps a version, continuing a
-- WITH clause, in the parameters of run_update.sql: $1 tenant, $2 id, $3
-- session, $4 status, $5 data, $6 now, $7 the version the caller holds,
-- $8 the fence (0: unfenced). run_update_keep.sql says why it holds.
-- The update reaches the row by old's ctid (a TID scan instead of a
-- second probe of the primary key): a row a concurrent write replaced
-- after the snapshot is re-checked on its newest version, which is then
-- at another version than $7, so nothing is written. Queries name it
-- {update_keep}.
old AS (
  SELECT {run_columns}, true AS keeps, ctid AS tid
  FROM {runs}
  WHERE tenant = $1 AND id = $2
), written AS (
  UPDATE {runs} x
  SET session = $3, status = $4, data = $5, version = x.version + 1, updated_at = $6, fence = greatest(x.fence, $8::bigint)
  FROM old
  WHERE x.ctid = old.tid AND x.version = $7 AND old.version = $7
    AND ($8::bigint = 0 OR x.fence <= $8::bigint)
  RETURNING {x_run_columns}
)
