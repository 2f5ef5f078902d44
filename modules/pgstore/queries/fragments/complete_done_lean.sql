-- The lean Complete's batch (complete.sql rendered lean): for a batch of
-- queues without a retention row whose items asked for no uniqueness
-- window, nothing is kept and no event recorded, so the batch is one
-- DELETE, and the plan leaves out the retention's join, the INSERT of
-- kept items and the events' CTEs (PostgreSQL initializes every node of a
-- plan on every execution; that was over half of a Complete of one). ret
-- holds a row when a queue of the batch has a retention row (another
-- process set one): then nothing is deleted, and the statement's last row
-- (queue '' and token 0, which no lease has) says to complete with the
-- full statement. Items asking for a uniqueness window are never deleted
-- here. The state is compared through coalesce as in
-- fragments/complete_done.sql. Queries name it {complete_done_lean}.
ret AS MATERIALIZED (
    SELECT 1 FROM {work}_retention r WHERE r.queue = ANY ($1::text[]) LIMIT 1
),
done AS (
    DELETE FROM {work} w
    USING unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
      AND coalesce(w.state, '') = 'leased' AND w.token = l.token AND w.cancelled_at IS NULL
      AND w.unique_for_us = 0 AND NOT EXISTS (SELECT 1 FROM ret)
    RETURNING w.queue, w.tenant, w.id, w.token
)
