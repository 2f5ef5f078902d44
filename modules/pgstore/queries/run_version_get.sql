-- One version of a run: $1 tenant, $2 id, $3 versions the policy keeps
-- (0: none), $4 the age cut (-infinity without one), $5 the version. The
-- run itself when $5 is its version, otherwise the kept version within
-- the policy's bounds, read with the run in one snapshot. No row: the
-- run or that version is not kept.
SELECT {run_columns}
FROM {runs}
WHERE tenant = $1 AND id = $2 AND version = $5
UNION ALL
SELECT {version_columns}
FROM {runs} r JOIN {runs}_versions v ON v.tenant = r.tenant AND v.id = r.id
WHERE r.tenant = $1 AND r.id = $2 AND r.version <> $5 AND v.version = $5
  AND $3 > 0 AND v.updated_at > $4 AND v.version > {kept_floor}
