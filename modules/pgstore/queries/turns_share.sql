-- Take the shared side of the per-tenant turn lock: $1 queues, $2
-- tenants (parallel arrays). Enqueue, a retry and a requeue run this
-- first in their transaction and make items due in the next statement,
-- whose snapshot is therefore taken with the lock held: a prune or a park
-- of the same tenant (turns_lock.sql) has either committed, and is seen,
-- or waits for this transaction. Shared locks never wait for each other.
SELECT pg_advisory_xact_lock_shared(hashtext('{turns}'), hashtext(l.queue || chr(31) || l.tenant))
FROM unnest($1::text[], $2::text[]) AS l(queue, tenant)
