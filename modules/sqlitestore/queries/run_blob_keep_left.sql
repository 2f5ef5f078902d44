-- run_blob_keep.sql for a store that keeps no versions, when the run
-- still has versions kept under another policy (another store on the
-- file, or an earlier open): the data a put replaces is kept with them,
-- since a version kept by a status patch holds no data of its own and
-- reads it from the next newer version that holds some, or the run's.
-- Writes nothing for a run without versions.
INSERT INTO adk_run_blobs (data)
SELECT nullif(data, X'') FROM adk_runs
WHERE tenant = ?1 AND id = ?2 AND version = ?3 AND (?4 = 0 OR fence <= ?4)
    AND EXISTS (SELECT 1 FROM adk_run_versions WHERE tenant = ?1 AND id = ?2)
