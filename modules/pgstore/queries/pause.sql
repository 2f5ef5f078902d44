-- Pause a queue's tenant, or the queue under tenant '': $1 queue, $2
-- tenant, $3 now. Pausing what is paused changes nothing.
INSERT INTO {work}_pauses (queue, tenant, paused_at)
VALUES ($1, $2, $3)
ON CONFLICT (queue, tenant) DO NOTHING
