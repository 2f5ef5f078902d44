-- Deletes every version of a run (the run is being deleted).
DELETE FROM adk_run_versions WHERE tenant = ? AND id = ?
