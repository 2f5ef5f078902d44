-- Copies the run's data into a new row of adk_run_blobs for the version
-- a put keeps (empty data as NULL), when the run holds the version given
-- and no fence above the write's (?4, 0 for an unfenced write): the write
-- that replaces it checks the same, in the same transaction, so a refused
-- write copies nothing. The row's n (the rowid the insert reports)
-- is stored with the version by run_version_keep.sql.
--
-- ?5 is 1 for a store that keeps no versions: it copies only when the run
-- still has versions kept under another policy (another store on the
-- file, or an earlier open), since a version kept by a status patch holds
-- no data of its own and reads it from the next newer version that holds
-- some, or the run's. It writes nothing for a run without versions.
INSERT INTO adk_run_blobs (data)
SELECT nullif(data, X'') FROM adk_runs
WHERE tenant = ?1 AND id = ?2 AND version = ?3 AND (?4 = 0 OR fence <= ?4)
    AND (?5 = 0 OR EXISTS (SELECT 1 FROM adk_run_versions WHERE tenant = ?1 AND id = ?2))
