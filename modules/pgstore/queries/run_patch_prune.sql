-- The patch of run_patch.sql ($1..$10) carrying the prune, on a store
-- that keeps versions, sent when the store expects the patch to be the
-- run's turn to prune (versions.go, pruneTurnAhead) and the patch keeps
-- no version (a counter-only patch): when it leaves the run at a Version
-- that is a multiple of $14 (pruneEvery), the same statement deletes the
-- run's versions beyond the policy's bounds (prune_versions.sql): $11
-- how many versions the policy keeps, $12 the age cut, $13 the prune
-- batch. The patch keeps no version, so every kept version is in the
-- statement's snapshot and the newest-N boundary counts $11 + 1, as in
-- run_versions_prune.sql. Whether it pruned depends only on the Version
-- it left: the caller sends no prune after it.
WITH written AS (
  {patch_update}
  RETURNING {run_columns}
), bounds AS (
  SELECT $11::integer + 1 AS kept, $12::timestamptz AS cut, $13::integer AS batch
), pruned AS (
{prune_versions}
  AND (SELECT version FROM written) % $14::bigint = 0
{written_or_stored}
