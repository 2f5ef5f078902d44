-- One page of a run's versions, newest first: $1 tenant, $2 id, $3
-- versions the policy keeps (0: none), $4 the age cut (-infinity without
-- one), $5 below this version (the cursor), $6 rows. The first row is
-- always the run itself (its first column 0), then (1) the kept versions
-- below $5 within the policy's bounds, all in one snapshot. No row: the
-- run does not exist.
SELECT 0, {run_columns}
FROM {runs}
WHERE tenant = $1 AND id = $2
UNION ALL
(SELECT 1, {version_columns}
 FROM {runs} r JOIN {runs}_versions v ON v.tenant = r.tenant AND v.id = r.id
 WHERE r.tenant = $1 AND r.id = $2 AND v.version < $5 AND v.version < r.version
   AND $3 > 0 AND v.updated_at > $4 AND v.version > {kept_floor}
 ORDER BY v.version DESC
 LIMIT $6)
ORDER BY 1, 8 DESC
