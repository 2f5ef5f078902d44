-- Create a run at version 1: $1 tenant, $2 id, $3 session, $4 status,
-- $5 data, $6 now. Rows come back as (written, run columns): the new run,
-- or, when the run exists, the stored run as this statement's snapshot
-- holds it, so the conflict reports the version of one instant inside the
-- call (the snapshot's) at which a create is refused. No row comes back
-- when the run that refused the insert committed after the snapshot was
-- taken: nothing was written, and the caller sends the statement again.
WITH written AS (
  INSERT INTO {runs} (tenant, id, session, status, data, version, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, 1, $6, $6)
  ON CONFLICT (tenant, id) DO NOTHING
  RETURNING {run_columns}
{written_or_stored}
