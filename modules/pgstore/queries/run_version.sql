-- The stored version, read to report a conflict: $1 tenant, $2 id.
SELECT version FROM {runs} WHERE tenant = $1 AND id = $2
