-- Delete run $1/$2's versions beyond the policy's bounds
-- (prune_versions.sql): $3 how many versions the policy keeps, $4 the
-- age cut, $5 the prune batch. A patch in a caller's transaction sends
-- it after its write when that write left the run at a Version that is a
-- multiple of pruneEvery (versions.go; outside one it sends
-- run_prune_async.sql). Unlike the prune inside a put, this statement's
-- snapshot holds the version the patch just kept, so the newest-N
-- boundary is one version further down: kept is $3 + 1.
WITH bounds AS (
  SELECT $3::integer + 1 AS kept, $4::timestamptz AS cut, $5::integer AS batch
)
{prune_versions}
