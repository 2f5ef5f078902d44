-- The prune of run_versions_prune.sql ($1..$5, the same bounds) for a
-- patch that has committed: the prune is a transaction of its own, and
-- its commit does not wait for its WAL to reach the disk
-- (synchronous_commit off, for this transaction only). A prune lost to a
-- crash deletes nothing a read could see (reads apply the bounds
-- themselves), and the run's next turn deletes it again; a commit that
-- waited would cost the patch on its turn a second flush of the WAL.
-- Inside a caller's transaction the patch sends run_versions_prune.sql,
-- which commits with the rest of it.
WITH bounds AS (
  SELECT $3::integer + 1 AS kept, $4::timestamptz AS cut, $5::integer AS batch
), lazy AS (
  SELECT set_config('synchronous_commit', 'off', true) AS setting
)
{prune_versions}
  AND EXISTS (SELECT 1 FROM lazy)
