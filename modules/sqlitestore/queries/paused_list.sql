SELECT tenant FROM adk_pauses WHERE queue = ?1 ORDER BY tenant
