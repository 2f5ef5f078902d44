-- Create a run at version 1: $1 tenant, $2 id, $3 session, $4 status,
-- $5 data, $6 now, $7 fence (0: unfenced). Rows come back as (written,
-- run columns): the new run, or, when the run exists, the stored run as
-- this statement's snapshot holds it, so the refusal (its fence, or the
-- conflict) reports the run of one instant inside the call (the
-- snapshot's) at which a create is refused. No row comes back when the
-- run that refused the insert committed after the snapshot was taken:
-- nothing was written, and the caller sends the statement again.
WITH written AS (
  INSERT INTO {runs} (tenant, id, session, status, data, version, created_at, updated_at, fence)
  VALUES ($1, $2, $3, $4, $5, 1, $6, $6, $7)
  ON CONFLICT (tenant, id) DO NOTHING
  RETURNING {run_columns}
{written_or_stored}
