-- The CTE written of a put that keeps a version, opening a WITH clause,
-- in the parameters of run_update.sql: $1 tenant, $2 id, $3 session, $4
-- status, $5 data, $6 now, $7 the version the caller holds, $8 the fence
-- (0: unfenced). run_update_keep.sql says why it holds. The update joins
-- the run as the statement's snapshot holds it (o, by the primary key) and
-- reaches the row to write by o's ctid (a TID scan instead of a second
-- probe of the primary key), and it returns o's columns beside the run as
-- written ({old_columns}), so the version is kept from the update's own
-- result: no CTE holds the old row apart. A row a concurrent write
-- replaced after the snapshot is re-checked on its newest version, which
-- is then at another version than $7, so nothing is written. Queries name
-- it {update_keep}.
written AS (
  UPDATE {runs} x
  SET session = $3, status = $4, data = $5, version = x.version + 1, updated_at = $6, fence = greatest(x.fence, $8::bigint)
  FROM {runs} o
  WHERE o.tenant = $1 AND o.id = $2 AND x.ctid = o.ctid AND x.version = $7 AND o.version = $7
    AND ($8::bigint = 0 OR x.fence <= $8::bigint)
  RETURNING {x_run_columns}, true AS o_keeps, {old_columns}
)
