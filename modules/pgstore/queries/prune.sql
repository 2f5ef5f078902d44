-- Prune: $1 queue, $2 now, $3 batch, $4 QueueEventLog. Removes up to $3
-- finished items, oldest finished first through {work}_finished, whose
-- uniqueness window has closed and which the retention lets go: past its
-- age, or older than the queue's newest keep_count finished items; a
-- completed item kept only for its window goes once it closed (a
-- retention that does not keep never lets a cancelled item go: that is
-- PurgeCancelled's). Their events go with them, and the queue's log is
-- trimmed to its latest $4 events. Returns the items removed.
WITH ret AS (
    SELECT coalesce(max(r.age_us), 0) AS age_us, coalesce(max(r.keep_count), 0) AS keep_count
    FROM {work}_retention r WHERE r.queue = $1
),
-- The newest keep_count-th finished item: older ones are beyond the count.
nth AS (
    SELECT w.finished_at, w.tenant, w.id
    FROM {work} w, ret r
    WHERE r.keep_count > 0 AND w.queue = $1 AND w.finished_at IS NOT NULL
    ORDER BY w.finished_at DESC, w.tenant DESC, w.id DESC
    OFFSET (SELECT greatest(keep_count - 1, 0) FROM ret) LIMIT 1
),
victims AS (
    SELECT w.ctid
    FROM {work} w, ret r
    WHERE w.queue = $1 AND w.finished_at IS NOT NULL AND w.state IN ('completed', 'cancelled')
      AND (w.unique_until IS NULL OR w.unique_until <= $2)
      AND CASE WHEN r.age_us > 0 OR r.keep_count > 0 THEN
                   (r.age_us > 0 AND w.finished_at + r.age_us * interval '1 microsecond' <= $2)
                OR (r.keep_count > 0 AND (w.finished_at, w.tenant, w.id) < (SELECT n.finished_at, n.tenant, n.id FROM nth n))
               ELSE w.state = 'completed'
          END
    ORDER BY w.finished_at, w.tenant, w.id
    LIMIT $3
    FOR UPDATE OF w SKIP LOCKED
),
gone AS (
    DELETE FROM {work} w
    WHERE w.ctid = ANY (ARRAY(SELECT ctid FROM victims)) AND w.queue = $1 AND w.state IN ('completed', 'cancelled')
    RETURNING w.queue, w.tenant, w.id, w.events
),
gone_events AS (
    DELETE FROM {work}_events x
    USING gone g
    WHERE g.events > 0 AND x.queue = g.queue AND x.tenant = g.tenant AND x.id = g.id
),
log_bound AS (
    SELECT l.seq FROM {work}_log l WHERE l.queue = $1 ORDER BY l.seq DESC OFFSET $4 LIMIT 1
),
log_trim AS (
    DELETE FROM {work}_log l
    WHERE l.queue = $1 AND l.seq <= (SELECT seq FROM log_bound)
),
log_mark AS (
    UPDATE {work}_retention r SET log_trimmed = greatest(r.log_trimmed, b.seq)
    FROM log_bound b
    WHERE r.queue = $1
)
SELECT count(*) FROM gone
