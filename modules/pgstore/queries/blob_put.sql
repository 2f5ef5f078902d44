-- $1 tenant, $2 ref, $3 data.
INSERT INTO {blobs} (tenant, ref, data) VALUES ($1, $2, $3)
