INSERT OR REPLACE INTO adk_recent (queue, slot, turn, tenant, id, worker, at) VALUES (?1, ?2 % 1000, ?2, ?3, ?4, ?5, ?6)
