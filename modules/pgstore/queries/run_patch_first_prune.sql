-- The first try of run_patch_first.sql ($1..$10) carrying the prune, sent
-- when the store expects the patch to be the run's turn to prune
-- (versions.go, pruneTurnAhead): when the patch leaves the run at a
-- Version that is a multiple of $14 (pruneEvery), the same statement
-- deletes the run's versions beyond the policy's bounds
-- (prune_versions.sql): $11 how many versions the policy keeps, $12 the
-- age cut, $13 the prune batch. The statement's snapshot does not hold
-- the version this patch keeps, as in a put's prune, so the newest-N
-- boundary counts $11 versions below it; a patch to the same status
-- keeps none, and the boundary then counts one more. Whether it pruned
-- depends only on the Version it left: the caller sends no prune after
-- it. As in run_patch_first.sql, a row comes back only when the patch
-- wrote (and then pruned on its turn); no row: nothing was written nor
-- pruned, and the caller sends run_patch_keep.sql.
WITH {patch_first}, {keep_version}, bounds AS (
  SELECT $11::integer + CASE WHEN (SELECT o_keeps FROM written) THEN 0 ELSE 1 END AS kept,
         $12::timestamptz AS cut, $13::integer AS batch
), pruned AS (
{prune_versions}
  AND (SELECT version FROM written) % $14::bigint = 0
)
SELECT true, {run_columns} FROM written
