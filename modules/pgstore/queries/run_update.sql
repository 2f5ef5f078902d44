-- Optimistic put: $1 tenant, $2 id, $3 session, $4 status, $5 data,
-- $6 now, $7 the version the caller holds. Rows come back as (written,
-- run columns): the run as written or, when the update matched no row,
-- the stored run as this statement's snapshot holds it. The update
-- judged that same row unless a concurrent write moved it on after the
-- snapshot (then the update re-checks the newest row): so a stored
-- version other than $7 is the version of one instant inside the call at
-- which the put is refused, and a stored $7 means the row moved on, and
-- the caller sends the statement again (nothing was written). Reading the
-- version in a second statement instead can find the run deleted and
-- created again at the very version the caller held. No row: the run did
-- not exist at the snapshot.
WITH written AS (
  UPDATE {runs}
  SET session = $3, status = $4, data = $5, version = version + 1, updated_at = $6
  WHERE tenant = $1 AND id = $2 AND version = $7
  RETURNING {run_columns}
{written_or_stored}
