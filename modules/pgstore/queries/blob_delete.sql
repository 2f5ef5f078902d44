-- $1 tenant, $2 ref.
DELETE FROM {blobs} WHERE tenant = $1 AND ref = $2
