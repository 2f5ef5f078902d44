-- Writes the run's data (empty data as NULL) over the adk_run_blobs row
-- of its version ?3, the row run_version_recycle.sql has just moved
-- there in the same transaction.
UPDATE adk_run_blobs SET data = (SELECT nullif(data, X'') FROM adk_runs WHERE tenant = ?1 AND id = ?2)
WHERE n = (SELECT blob FROM adk_run_versions WHERE tenant = ?1 AND id = ?2 AND version = ?3)
