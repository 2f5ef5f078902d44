-- QueueEvents: $1 queue, $2 the cursor's seq (events after it), $3
-- limit. Only the latest QueueEventLog ($4) count as kept, whether or not
-- Prune has trimmed the rest yet. Returns the events, then one row of
-- kind NULL: the boundary's gap, and the queue's latest seq.
WITH bound AS (
    SELECT coalesce((SELECT l.seq FROM {work}_log l WHERE l.queue = $1 ORDER BY l.seq DESC OFFSET $4 - 1 LIMIT 1), 0) AS lo,
           coalesce((SELECT r.log_trimmed FROM {work}_retention r WHERE r.queue = $1), 0) AS trimmed
)
SELECT * FROM (
    SELECT l.seq, l.tenant, l.id, l.kind, l.at, l.worker, l.attempt, l.token, l.error, l.next_due, l.signal, l.reason, l.run_time_us
    FROM {work}_log l, bound b
    WHERE l.queue = $1 AND l.seq > $2 AND l.seq >= b.lo
    ORDER BY l.seq
    LIMIT $3
) e
UNION ALL
SELECT coalesce((SELECT max(l.seq) FROM {work}_log l WHERE l.queue = $1), b.trimmed), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       CASE WHEN $2 < b.trimmed OR EXISTS (SELECT 1 FROM {work}_log l WHERE l.queue = $1 AND l.seq > $2 AND l.seq < b.lo) THEN 1 ELSE 0 END
FROM bound b
