-- Additive patch, keeping no version: the deltas are added in SQL, so
-- concurrent patches all land. $1 tenant, $2 id, $3..$7 the counter
-- deltas, $8 status ('' keeps it), $9 now, $10 the fence (0: unfenced).
-- A patch that would take any counter past the bigint range, or whose
-- fence is below the run's, matches no row (the sums are checked in
-- numeric, which cannot overflow) rather than failing halfway, and the
-- stored run is read in this same statement, as its snapshot holds it,
-- for the refusal to name the fence or the counter (when the stored run
-- passes both checks, a concurrent write moved the row on after the
-- snapshot: nothing was written, and the caller sends the statement
-- again). Rows come back as (written, run columns); no row: the run did
-- not exist at the snapshot.
WITH written AS (
  {patch_update}
  RETURNING {run_columns}
{written_or_stored}
