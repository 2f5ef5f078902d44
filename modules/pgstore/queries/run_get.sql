-- $1 tenant, $2 id.
SELECT {run_columns}
FROM {runs}
WHERE tenant = $1 AND id = $2
