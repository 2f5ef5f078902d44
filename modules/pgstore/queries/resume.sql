-- End a pause: $1 queue, $2 tenant ('' the queue's own), $3 the
-- notification channel. The queue's claimers are woken on commit.
WITH gone AS (
    DELETE FROM {work}_pauses WHERE queue = $1 AND tenant = $2
    RETURNING 1
)
SELECT pg_notify($3, $1), (SELECT count(*) FROM gone)
