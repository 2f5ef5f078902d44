-- When the item's last claim was recorded (NULL: none is).
SELECT max(at) FROM adk_events WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND kind = 'claimed'
