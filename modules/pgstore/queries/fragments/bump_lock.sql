-- The CTEs bump_lock and batch of a claim statement (claim.sql,
-- claim_flow.sql), after a CTE served(tenant, ...) of the tenants the
-- claim leased items of: the served tenants' turn rows, locked in name
-- order, one probe of the primary key each, and a row another claimer is
-- bumping skipped (its bump sends the tenant to the back anyway); and
-- the turn batch the bump gives them. A row the claim locked already (a
-- gated tenant's in claim_flow.sql) is its own, so it is never skipped.
-- Queries name it {bump_lock}.
bump_lock AS (
    SELECT l.tenant
    FROM (SELECT tenant FROM served ORDER BY tenant) s
    CROSS JOIN LATERAL (
        SELECT t.tenant FROM {turns} t
        WHERE t.queue = $1 AND t.tenant = s.tenant
        FOR UPDATE SKIP LOCKED
    ) l
),
batch AS MATERIALIZED (
    SELECT nextval('{turns}_seq') AS n
)
