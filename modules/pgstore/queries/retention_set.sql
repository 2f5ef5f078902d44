-- SetRetention: $1 queue, $2 age in microseconds, $3 count, $4 events.
-- The row stays when set to zero (it keeps log_trimmed, and a queue with
-- a zero row keeps nothing, as one without a row).
INSERT INTO {work}_retention (queue, age_us, keep_count, events)
VALUES ($1, $2, $3, $4)
ON CONFLICT (queue) DO UPDATE SET age_us = EXCLUDED.age_us, keep_count = EXCLUDED.keep_count, events = EXCLUDED.events
