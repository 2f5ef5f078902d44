-- $1 tenant, $2 ref.
SELECT data FROM {blobs} WHERE tenant = $1 AND ref = $2
