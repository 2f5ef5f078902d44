-- Per-tenant counts of one queue at ?2.
SELECT tenant,
       coalesce(sum(state = 'queued' AND due_at <= ?2), 0),
       coalesce(sum(state = 'queued' AND due_at > ?2), 0),
       coalesce(sum(state = 'leased'), 0),
       coalesce(sum(state = 'dead'), 0),
       coalesce(sum(state = 'waiting'), 0),
       coalesce(sum(state = 'cancelled'), 0),
       min(CASE WHEN state = 'queued' AND due_at <= ?2 THEN enqueued_at END)
FROM adk_work WHERE queue = ?1 GROUP BY tenant
