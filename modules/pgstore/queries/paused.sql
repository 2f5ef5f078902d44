-- What of a queue is paused: $1 queue. Tenant '' is the queue's own pause.
SELECT tenant FROM {work}_pauses WHERE queue = $1 ORDER BY tenant
