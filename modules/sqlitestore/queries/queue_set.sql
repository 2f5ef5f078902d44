UPDATE adk_queues SET stamp = ?2, turn = ?3 WHERE queue = ?1
