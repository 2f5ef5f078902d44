-- Cancels a queued, waiting or dead item at ?4 for reason ?5.
UPDATE adk_work SET state = 'cancelled', cancelled_at = ?4, cancel_reason = ?5, finished_at = (?4 / 1000) * 1000,
    wait_signal = '', wait_since = 0, wait_until = 0
WHERE queue = ?1 AND tenant = ?2 AND id = ?3 AND state IN ('queued', 'waiting', 'dead')
