-- Copies the run's data into a new row of adk_run_blobs for the version
-- a put keeps (empty data as NULL), when the run holds the version given
-- and no fence above the write's (?4, 0 for an unfenced write): the write
-- that replaces it checks the same, in the same transaction, so a refused
-- write copies nothing. The row's n (the rowid the insert reports)
-- is stored with the version by run_version_keep.sql.
INSERT INTO adk_run_blobs (data)
SELECT nullif(data, X'') FROM adk_runs
WHERE tenant = ?1 AND id = ?2 AND version = ?3 AND (?4 = 0 OR fence <= ?4)
