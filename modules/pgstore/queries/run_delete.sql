-- $1 tenant, $2 id.
DELETE FROM {runs} WHERE tenant = $1 AND id = $2
