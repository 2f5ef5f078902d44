-- Keeps the run as it is as a version whose data is the adk_run_blobs row
-- ?3, which run_blob_keep.sql has just written from the run in the same
-- transaction, under the write's conditions. A run's versions only grow and go with it, so the key is
-- new.
INSERT INTO adk_run_versions (tenant, id, version, session, status, blob,
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
SELECT tenant, id, version, session, status, ?3,
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at
FROM adk_runs WHERE tenant = ?1 AND id = ?2
