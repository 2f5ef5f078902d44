-- Delete a run and its versions: $1 tenant, $2 id, $3 the fence (0:
-- unfenced). The run's row is locked first (old: FOR UPDATE waits for a
-- writer holding it and reads the row as that writer committed it), so
-- the fence is judged on the newest row and no write comes between the
-- check and the delete. One row comes back: whether the run was deleted,
-- and its fence when it was not (NULL: there was no run). The versions go
-- after the row, through {runs}_drop_versions, whose DELETE takes a
-- snapshot of its own: every writer that kept a version held the row
-- lock, so committed before this statement deleted the row, and that
-- snapshot sees what each kept; none can keep one after (the row is
-- gone, and a create of the same id waits for this transaction).
WITH old AS (
  SELECT fence FROM {runs} WHERE tenant = $1 AND id = $2 FOR UPDATE
), gone AS (
  DELETE FROM {runs} x USING old
  WHERE x.tenant = $1 AND x.id = $2 AND ($3::bigint = 0 OR old.fence <= $3::bigint)
  RETURNING x.fence
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM gone) THEN {runs}_drop_versions($1, $2) >= 0 ELSE false END,
       (SELECT fence FROM old)
