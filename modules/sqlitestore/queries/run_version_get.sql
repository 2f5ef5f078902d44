-- The run as it was at version ?3: the run itself when it holds that
-- version, else the kept version (bounds as in run_versions_page.sql).
-- A version's data is its row of adk_run_blobs. A version kept by a
-- patch holds no data of its own (blob NULL): it reads the data of the
-- next newer version that holds some, or else the run's, which is what
-- the run held at that version, since only a put changes the data.
-- Prunes delete the oldest first, and a put moves only the oldest
-- version, so the version a read takes the data from outlives the
-- versions that read it.
SELECT tenant, id, seq, session, status, data, version,
       input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND version = ?3
UNION ALL
SELECT v.tenant, v.id, r.seq, v.session, v.status,
       CASE WHEN v.blob IS NOT NULL THEN (SELECT data FROM adk_run_blobs WHERE n = v.blob)
            WHEN EXISTS (SELECT 1 FROM adk_run_versions h
                         WHERE h.tenant = v.tenant AND h.id = v.id AND h.version > v.version AND h.blob IS NOT NULL)
            THEN (SELECT data FROM adk_run_blobs
                  WHERE n = (SELECT h.blob FROM adk_run_versions h
                             WHERE h.tenant = v.tenant AND h.id = v.id AND h.version > v.version AND h.blob IS NOT NULL
                             ORDER BY h.version LIMIT 1))
            ELSE r.data END,
       v.version,
       v.input_tokens, v.output_tokens, v.cost_micros, v.iterations, v.cursor, r.created_at, v.updated_at, v.fence
FROM adk_run_versions v JOIN adk_runs r ON r.tenant = v.tenant AND r.id = v.id
WHERE v.tenant = ?1 AND v.id = ?2 AND v.version = ?3 AND ?4 > 0 AND v.updated_at > ?5
  AND v.version >= coalesce((SELECT version FROM adk_run_versions
                             WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1 OFFSET ?4 - 1), 0)
