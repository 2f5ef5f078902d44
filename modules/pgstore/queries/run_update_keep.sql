-- Optimistic put that keeps the run as it was as a version (keep_version.sql
-- takes $1..$5: tenant, id, versions kept, age cut, prune batch): $6
-- session, $7 status, $8 data, $9 now, $10 the version the caller holds,
-- $11 the fence (0: unfenced). The version kept is the row of the
-- statement's snapshot (old), and the update lands only on a row at
-- version $10 while old is at $10 too: every write bumps the version, so
-- the row the update replaces (re-checked on the newest row when a
-- concurrent write moved it on, as in run_update.sql) is then old itself,
-- and no lock is taken before the update. Rows come back as (written, run
-- columns): the run as written or, when the update matched no row, old;
-- an old that fails the checks (a fence above $11, a version other than
-- $10) is the run of one instant inside the call at which the put is
-- refused, and one that passes them means the row moved on after the
-- snapshot: nothing was written, and the caller sends the statement
-- again. No row: the run did not exist at the snapshot.
WITH old AS (
  SELECT {run_columns}, true AS keeps
  FROM {runs}
  WHERE tenant = $1 AND id = $2
), written AS (
  UPDATE {runs} x
  SET session = $6, status = $7, data = $8, version = x.version + 1, updated_at = $9, fence = greatest(x.fence, $11::bigint)
  FROM old
  WHERE x.tenant = $1 AND x.id = $2 AND x.version = $10 AND old.version = $10
    AND ($11::bigint = 0 OR x.fence <= $11::bigint)
  RETURNING {x_run_columns}
), {keep_version}
SELECT true, * FROM written
UNION ALL
SELECT false, {run_columns} FROM old WHERE NOT EXISTS (SELECT 1 FROM written)
