-- Keeps the run as it is as a version by moving the row of its oldest
-- version there, when that version holds data (a put kept it) and the
-- bounds let it go once the run has one version more: it is past the
-- ?5 newest (the run has ?5 versions or more) or was written at or before
-- ?6. The row takes the run's version, session, status, counters, fence
-- and updated_at and keeps its blob, which run_blob_recycle.sql then
-- writes the run's data over. A prune would have deleted the oldest
-- version first, and no version is older, so none reads its data from
-- it. Nothing is moved when the run does not hold the version given
-- (?3) or holds a fence above the write's (?4, 0 for an unfenced write),
-- as the write that replaces it checks in the same transaction, or when
-- the oldest version is kept or holds no data: then run_blob_keep.sql
-- adds a version.
UPDATE adk_run_versions SET (version, session, status, input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at) =
    (SELECT version, session, status, input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at
     FROM adk_runs WHERE tenant = ?1 AND id = ?2)
WHERE tenant = ?1 AND id = ?2
    AND version = (SELECT version FROM adk_run_versions WHERE tenant = ?1 AND id = ?2 ORDER BY version LIMIT 1)
    AND blob IS NOT NULL
    AND (updated_at <= ?6
         OR EXISTS (SELECT 1 FROM adk_run_versions WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1 OFFSET ?5 - 1))
    AND EXISTS (SELECT 1 FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND version = ?3 AND (?4 = 0 OR fence <= ?4))
