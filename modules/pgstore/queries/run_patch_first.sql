-- The first try of a patch that keeps a version (run_patch_keep.sql, in
-- its parameters), without the row lock (fragments/patch_first.sql): the
-- run as the statement's snapshot holds it (o) is checked and the update
-- lands only on that very row (its ctid; an update of a row a concurrent write
-- replaced is re-checked on the newest one, and must still be at o's
-- version), so the version kept is the row replaced. When the run moved
-- on after the snapshot, nothing is written and the snapshot's run is
-- returned passing every check: the caller then sends run_patch_keep.sql,
-- which locks the row. A run that fails a check (a fence above $10, a sum
-- past the bigint range) is the run of one instant inside the call at
-- which the patch is refused, as in run_patch.sql. Rows come back as in
-- run_patch_keep.sql; no row: the run did not exist at the snapshot.
-- Without the lock the patch writes no tuple lock (a WAL record, and a
-- second exclusive lock of the run's page) and probes the primary key
-- once. It prunes nothing: run_patch_first_prune.sql is the same try
-- with the prune.
WITH {patch_first}, {keep_version}
{written_or_snapshot}
