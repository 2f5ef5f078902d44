-- Keeps the run as it is as a version, when it holds the version given
-- and no fence above the write's (?4, 0 for an unfenced write): the write
-- that replaces it checks the same, in the same transaction. The version
-- holds the run's data (an empty blob stored as NULL, since X'' marks a
-- version that holds none: run_version_keep_patch.sql).
INSERT OR REPLACE INTO adk_run_versions (tenant, id, version, session, status, data,
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
SELECT tenant, id, version, session, status, nullif(data, X''),
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at
FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND version = ?3 AND (?4 = 0 OR fence <= ?4)
