-- The due time of one tenant's earliest queued item, NULL when it holds
-- none: the earlier of two ordered probes, one of {work}_ready (priority
-- 0) and one of {work}_ready_due (the other priorities), each walked in
-- order and stopped at its first entry (ORDER BY, LIMIT 1: see
-- park_candidates.sql for why not min()). least() passes over a NULL. It
-- reads the tenant from a row ft(tenant) of the query around it, written
-- (SELECT {first_due} FROM (SELECT <tenant>) ft). Queries name it
-- {first_due}.
least((SELECT w.due_at FROM {work} w
       WHERE w.queue = $1 AND w.tenant = ft.tenant AND w.state = 'queued' AND w.priority = 0
       ORDER BY w.due_at, w.seq LIMIT 1),
      (SELECT w.due_at FROM {work} w
       WHERE w.queue = $1 AND w.tenant = ft.tenant AND w.state = 'queued' AND w.priority <> 0
       ORDER BY w.due_at, w.seq LIMIT 1))
