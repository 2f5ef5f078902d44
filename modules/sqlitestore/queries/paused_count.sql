-- Adds ?2 (1 or -1) to the queue's count of paused tenants.
INSERT INTO adk_queues (queue, paused_tenants) VALUES (?1, ?2)
ON CONFLICT (queue) DO UPDATE SET paused_tenants = paused_tenants + excluded.paused_tenants
