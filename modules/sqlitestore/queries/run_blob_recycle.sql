-- Writes the run's data (empty data as NULL) over the adk_run_blobs row
-- ?1, the row of the version run_version_recycle.sql has just moved to
-- the version the put keeps, in the same transaction.
UPDATE adk_run_blobs SET data = (SELECT nullif(data, X'') FROM adk_runs WHERE tenant = ?2 AND id = ?3)
WHERE n = ?1
