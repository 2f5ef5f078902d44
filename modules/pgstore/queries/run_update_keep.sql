-- Optimistic put that keeps the run as it was as a version (keep_version.sql
-- takes $1..$5: tenant, id, versions kept, age cut, prune batch): $6
-- session, $7 status, $8 data, $9 now, $10 the version the caller holds,
-- $11 the fence (0: unfenced). The run's row is locked first (old): FOR
-- UPDATE waits for a writer that holds it and then reads the row as that
-- writer committed it, so old is the newest row, and it stays so until
-- this statement commits. The checks are made on old, the update writes
-- old's successor, and the version kept is old itself: no concurrent
-- write can come between the row judged, the row kept and the row
-- replaced, and nothing is sent again. Rows come back as (written, run
-- columns): the run as written, or old, the run that refused the put. No
-- row: the run did not exist (at the snapshot, or it was deleted before
-- the lock).
WITH old AS (
  SELECT {run_columns}, true AS keeps
  FROM {runs}
  WHERE tenant = $1 AND id = $2
  FOR UPDATE
), written AS (
  UPDATE {runs} x
  SET session = $6, status = $7, data = $8, version = old.version + 1, updated_at = $9, fence = greatest(old.fence, $11::bigint)
  FROM old
  WHERE x.tenant = $1 AND x.id = $2 AND old.version = $10 AND ($11::bigint = 0 OR old.fence <= $11::bigint)
  RETURNING {x_run_columns}
), {keep_version}
SELECT true, * FROM written
UNION ALL
SELECT false, {run_columns} FROM old WHERE NOT EXISTS (SELECT 1 FROM written)
