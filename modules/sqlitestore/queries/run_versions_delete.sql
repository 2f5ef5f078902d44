-- Deletes every version of a run (the run is being deleted), returning
-- the blob of each, for run_blobs_delete.sql.
DELETE FROM adk_run_versions WHERE tenant = ? AND id = ?
RETURNING blob
