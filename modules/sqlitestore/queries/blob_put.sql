INSERT INTO adk_blobs (tenant, ref, data, created_at) VALUES (?, ?, ?, ?)
