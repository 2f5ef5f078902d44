-- One page of a run's versions, newest first: on the first page (?3 = 0)
-- the run as it is, then its kept versions below the cursor ?3. A version
-- is kept while it is one of the run's ?4 newest and written after ?5.
-- One statement, so the page reads one snapshot of the file. A version
-- kept by a patch takes its data as in run_version_get.sql.
SELECT tenant, id, seq, session, status, data, version,
       input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND ?3 = 0
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
WHERE v.tenant = ?1 AND v.id = ?2 AND (?3 = 0 OR v.version < ?3) AND ?4 > 0 AND v.updated_at > ?5
  AND v.version >= coalesce((SELECT version FROM adk_run_versions
                             WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1 OFFSET ?4 - 1), 0)
ORDER BY 7 DESC LIMIT ?6
