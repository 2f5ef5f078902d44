-- Take the exclusive side of the enqueue's per-tenant advisory lock,
-- without waiting: $1 queue, $2 tenants. Returns the tenants locked; one
-- with an enqueue in flight is skipped.
SELECT t.tenant
FROM unnest($2::text[]) AS t(tenant)
WHERE pg_try_advisory_xact_lock(hashtext('{turns}'), hashtext($1 || chr(31) || t.tenant))
