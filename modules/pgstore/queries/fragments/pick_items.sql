-- One tenant's due items in claim order, locked FOR UPDATE SKIP LOCKED:
-- highest priority first (rank is -priority), then due time, then seq.
-- It reads a row a(tenant, rank, due_at, seq, lim) of the query around
-- it: the tenant, the place after which to look (rank -101 from the
-- start) and how many items to take at most. The items come from three
-- ranges, walked in order and lazily (the outer LIMIT stops the walk):
-- priorities above 0 and below 0 from {work}_ready_pri, which holds only
-- items with a priority, and priority 0 from {work}_ready, which holds
-- only items of priority 0 (schema version 6: before, it held every
-- queued item, and once a tenant's priority-0 items were gone each claim
-- walked all its items below 0 to find none). A queue
-- without priorities is claimed with fragments/pick_plain.sql unless
-- this process has seen it hold one; then it pays one probe of the
-- empty {work}_ready_pri per claim (the EXISTS, uncorrelated, is
-- evaluated once), and takes its items from {work}_ready. A range that cannot follow
-- the place a(rank) says (the high ranks after an item of rank 0 or
-- below, rank 0 after one below) is cut by a condition on a alone, which
-- PostgreSQL checks before it starts the range's scan, and the low
-- ranks' EXISTS is not asked again after an item of a low rank (which
-- answers it): a later round of a walk that reached rank 0 or below
-- probes neither the high ranks nor their EXISTS. Each
-- locking query states every predicate itself (see claim.sql). Queries
-- name it {pick_items}; it returns (id, due_at, seq, rank, ctid).
SELECT x.id, x.due_at, x.seq, x.rank, x.ctid
FROM (
    SELECT * FROM (
        SELECT w.id, w.due_at, w.seq, -w.priority AS rank, w.ctid
        FROM {work} w
        WHERE w.queue = $1 AND w.tenant = a.tenant AND w.state = 'queued' AND w.priority <> 0 AND -w.priority < 0
          AND a.rank < 0
          AND EXISTS (SELECT 1 FROM {work} q WHERE q.queue = $1 AND q.state = 'queued' AND q.priority <> 0)
          AND w.due_at <= $2 AND (-w.priority, w.due_at, w.seq) > (a.rank, a.due_at, a.seq)
        ORDER BY -w.priority, w.due_at, w.seq
        LIMIT a.lim
        FOR UPDATE SKIP LOCKED
    ) hi
    UNION ALL
    SELECT * FROM (
        SELECT w.id, w.due_at, w.seq, 0 AS rank, w.ctid
        FROM {work} w
        WHERE w.queue = $1 AND w.tenant = a.tenant AND w.state = 'queued' AND w.priority = 0 AND w.due_at <= $2
          AND a.rank <= 0
          AND (w.due_at, w.seq) > (CASE WHEN a.rank < 0 THEN '-infinity'::timestamptz ELSE a.due_at END, CASE WHEN a.rank < 0 THEN 0 ELSE a.seq END)
        ORDER BY w.due_at, w.seq
        LIMIT a.lim
        FOR UPDATE SKIP LOCKED
    ) mid
    UNION ALL
    SELECT * FROM (
        SELECT w.id, w.due_at, w.seq, -w.priority AS rank, w.ctid
        FROM {work} w
        WHERE w.queue = $1 AND w.tenant = a.tenant AND w.state = 'queued' AND w.priority <> 0 AND -w.priority > 0
          AND (a.rank > 0 OR EXISTS (SELECT 1 FROM {work} q WHERE q.queue = $1 AND q.state = 'queued' AND q.priority <> 0))
          AND w.due_at <= $2 AND (-w.priority, w.due_at, w.seq) > (a.rank, a.due_at, a.seq)
        ORDER BY -w.priority, w.due_at, w.seq
        LIMIT a.lim
        FOR UPDATE SKIP LOCKED
    ) lo
) x
LIMIT a.lim
