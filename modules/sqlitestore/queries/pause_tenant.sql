INSERT INTO adk_pauses (queue, tenant) VALUES (?1, ?2) ON CONFLICT (queue, tenant) DO NOTHING
