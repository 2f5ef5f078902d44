-- The put of run_update_keep.sql ($1..$8) on the write whose turn it is
-- to prune the run's versions (the one that leaves the run at a Version
-- that is a multiple of pruneEvery, versions.go): when the put wrote, the
-- same statement deletes the run's versions beyond the policy's bounds
-- (prune_versions.sql), $9 how many versions the policy keeps, $10 the
-- age cut, $11 the prune batch.
WITH {update_keep}, {keep_version}, bounds AS (
  SELECT $9::integer AS kept, $10::timestamptz AS cut, $11::integer AS batch
), pruned AS (
{prune_versions}
  AND EXISTS (SELECT 1 FROM kept)
)
{written_or_snapshot}
