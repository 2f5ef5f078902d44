-- The pick of one tenant's due items of the lean claims and claim.sql's
-- events rendering (the queue holds no queued item with a priority, so
-- every item is of rank 0 and the range of fragments/pick_items.sql for
-- rank 0 is the whole pick). It reads the same row a(tenant, rank,
-- due_at, seq, lim) and returns the same (id, due_at, seq, rank, ctid).
-- Queries name it {pick_plain}.
SELECT w.id, w.due_at, w.seq, 0 AS rank, w.ctid
FROM {work} w
WHERE w.queue = $1 AND w.tenant = a.tenant AND w.state = 'queued' AND w.priority = 0 AND w.due_at <= $2
  AND (w.due_at, w.seq) > (CASE WHEN a.rank < 0 THEN '-infinity'::timestamptz ELSE a.due_at END, CASE WHEN a.rank < 0 THEN 0 ELSE a.seq END)
ORDER BY w.due_at, w.seq
LIMIT a.lim
FOR UPDATE SKIP LOCKED
