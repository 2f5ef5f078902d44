-- Keeps the run as it is at version ?3 as a version, for a patch that
-- changes its status. A patch leaves the data as it is, so the version
-- holds none of its own: its blob is NULL, which says "the data of the
-- next newer version that holds some, or else the run's" (see
-- run_version_get.sql). The patch has checked the fence already. A
-- run's versions only grow and go with it, so the key is new.
INSERT INTO adk_run_versions (tenant, id, version, session, status, blob,
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
SELECT tenant, id, version, session, status, NULL,
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at
FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND version = ?3
