-- Optimistic put, keeping no version: $1 tenant, $2 id, $3 session,
-- $4 status, $5 data, $6 now, $7 the version the caller holds, $8 the
-- fence (0: unfenced). Rows come back as (written, run columns): the run
-- as written or, when the update matched no row, the stored run as this
-- statement's snapshot holds it. The update judged that same row unless
-- a concurrent write moved it on after the snapshot (then the update
-- re-checks the newest row): so a stored row that fails the checks (a
-- fence above $8, a version other than $7) is the run of one instant
-- inside the call at which the put is refused, and a stored row that
-- passes them means the row moved on, and the caller sends the statement
-- again (nothing was written). The snapshot's row and the newest one are
-- versions of one row, whose fence and version only grow, so the scan
-- never passes over a row the re-check would accept. Reading the version
-- in a second statement instead can find the run deleted and created
-- again at the very version the caller held. No row: the run did not
-- exist at the snapshot.
WITH written AS (
  UPDATE {runs}
  SET session = $3, status = $4, data = $5, version = version + 1, updated_at = $6, fence = greatest(fence, $8::bigint)
  WHERE tenant = $1 AND id = $2 AND version = $7 AND ($8::bigint = 0 OR fence <= $8::bigint)
  RETURNING {run_columns}
{written_or_stored}
