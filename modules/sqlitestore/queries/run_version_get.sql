-- The run as it was at version ?3: the run itself when it holds that
-- version, else the kept version (bounds as in run_versions_page.sql).
SELECT tenant, id, seq, session, status, data, version,
       input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at, fence
FROM adk_runs WHERE tenant = ?1 AND id = ?2 AND version = ?3
UNION ALL
SELECT v.tenant, v.id, r.seq, v.session, v.status, v.data, v.version,
       v.input_tokens, v.output_tokens, v.cost_micros, v.iterations, v.cursor, r.created_at, v.updated_at, v.fence
FROM adk_run_versions v JOIN adk_runs r ON r.tenant = v.tenant AND r.id = v.id
WHERE v.tenant = ?1 AND v.id = ?2 AND v.version = ?3 AND ?4 > 0 AND v.updated_at > ?5
  AND v.version >= coalesce((SELECT version FROM adk_run_versions
                             WHERE tenant = ?1 AND id = ?2 ORDER BY version DESC LIMIT 1 OFFSET ?4 - 1), 0)
