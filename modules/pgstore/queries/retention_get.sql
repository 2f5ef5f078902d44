-- Retention: $1 queue. No row means the zero retention.
SELECT age_us, keep_count, events FROM {work}_retention WHERE queue = $1
