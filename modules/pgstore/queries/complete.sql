-- Complete a batch in one statement: $1..$4 are parallel arrays (queue,
-- tenant, id, token). Each row is deleted only while it is still leased
-- under the token presented; the rows that come back completed, each with
-- the token that completed it (an item named twice comes back once), and
-- the others were lost, or are
-- leases whose cancel is pending, which the queue then settles
-- (cancel_settle.sql).
--
-- The state is compared through coalesce (state is NOT NULL, so it means
-- the same) so that the planner cannot prove the predicate of the
-- adk_work_leased partial index and reach the rows through it: that
-- index holds only the queue and tenant, and a plan made on stale
-- statistics that uses it filters every leased row of the tenant for each
-- item (measured, when it held only the queue: 700 ms for a batch of 600
-- with ~800 leased).
--
-- This is the Complete of queues without limits; complete_flow.sql, the
-- Complete of a queue this process has claimed with limits, also wakes
-- the claimers when a capped tenant's lease ends. The primary key is the
-- only index left, one descent per item.
DELETE FROM {work} w
USING unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
  AND coalesce(w.state, '') = 'leased' AND w.token = l.token AND w.cancelled_at IS NULL
RETURNING w.queue, w.tenant, w.id, w.token
