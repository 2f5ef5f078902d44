-- Deletes a run's versions past the policy's bounds, at most ?5 of them:
-- those below its ?3 newest, and those written at or before ?4. Only its
-- ?5 oldest are looked at, so the cost of a write does not grow with the
-- versions it keeps; a run gains one version per write, so the oldest are
-- the ones past the bounds (reads check the bounds themselves).
DELETE FROM adk_run_versions WHERE tenant = ?1 AND id = ?2 AND version IN (
    SELECT version FROM (
        SELECT version, updated_at FROM adk_run_versions
        WHERE tenant = ?1 AND id = ?2 ORDER BY version LIMIT ?5)
    WHERE version <= coalesce((SELECT version FROM adk_run_versions
                               WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1 OFFSET ?3), -1)
       OR updated_at <= ?4)
