-- Take the exclusive side of the per-tenant turn lock, without waiting:
-- $1 queue, $2 tenants. Returns the tenants locked; one with an enqueue,
-- a retry or a requeue in flight (holding the shared side, see
-- turns_share.sql) is skipped. Pruning and parking a tenant's turn row
-- run under it, each in a statement of its own that starts after this
-- one, so its snapshot sees every item those writers committed.
SELECT t.tenant
FROM unnest($2::text[]) AS t(tenant)
WHERE pg_try_advisory_xact_lock(hashtext('{turns}'), hashtext($1 || chr(31) || t.tenant))
