-- Deletes a run's versions past the policy's bounds, at most ?5 of them:
-- those below its ?3 newest, and those written at or before ?4. Only its
-- ?5 oldest are looked at, so the cost of a write does not grow with the
-- versions it keeps; a run gains one version per write, so the oldest are
-- the ones past the bounds (reads check the bounds themselves). It
-- deletes the oldest first and stops at the first it keeps, so a version
-- kept by a patch, which reads its data from a newer version, never
-- outlives that one (even when the clock went back between writes).
-- Returns the blob of each version deleted, for run_blobs_delete.sql.
WITH batch AS (
    SELECT version, updated_at FROM adk_run_versions
    WHERE tenant = ?1 AND id = ?2 ORDER BY version LIMIT ?5
), kept AS (
    SELECT min(version) AS version FROM batch
    WHERE version > coalesce((SELECT version FROM adk_run_versions
                              WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1 OFFSET ?3), -1)
      AND updated_at > ?4
)
DELETE FROM adk_run_versions WHERE tenant = ?1 AND id = ?2
    AND version <= (SELECT max(version) FROM batch)
    AND version < coalesce((SELECT version FROM kept), 9223372036854775807)
RETURNING blob
