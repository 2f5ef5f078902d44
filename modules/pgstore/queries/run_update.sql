-- Optimistic put: $1 tenant, $2 id, $3 session, $4 status, $5 data,
-- $6 now, $7 the version the caller holds. Rows come back as (written,
-- run columns): the run as written, or, when the stored version differs,
-- the stored run read in this same statement and locked (FOR UPDATE
-- follows a concurrent update to the newest committed row and holds it),
-- so the conflict reports a version stored after the check failed and
-- before anything else could change it. Reading it in a second statement
-- instead can find the run deleted and created again at the very version
-- the caller held. No row: the run does not exist.
WITH written AS (
  UPDATE {runs}
  SET session = $3, status = $4, data = $5, version = version + 1, updated_at = $6
  WHERE tenant = $1 AND id = $2 AND version = $7
  RETURNING {run_columns}
), stored AS (
  SELECT {run_columns} FROM {runs}
  WHERE tenant = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM written)
  FOR UPDATE
)
SELECT true, * FROM written
UNION ALL
SELECT false, * FROM stored
