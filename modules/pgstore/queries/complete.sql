-- Complete a batch in one statement: $1..$4 are parallel arrays (queue,
-- tenant, id, token), $5 now (fragments/complete_done.sql). Each row is deleted only while it is still leased
-- under the token presented; the rows that come back completed, each with
-- the token that completed it (an item named twice comes back once), and
-- the others were lost, or are
-- leases whose cancel is pending, which the queue then settles
-- (cancel_settle.sql).
--
-- This is the Complete of queues without limits; complete_flow.sql, the
-- Complete of a queue this process has claimed with limits, also wakes
-- the claimers when a capped tenant's lease ends. The primary key is the
-- only index left, one descent per item. It is rendered twice (queries.go):
-- the full Complete, and the lean one of a batch that keeps nothing
-- (fragments/complete_done_lean.sql).
WITH
{done}
SELECT queue, tenant, id, token FROM done
{done_more}
