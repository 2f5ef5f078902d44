-- Up-migration of the pgstore schema from version 1 to version 2 (flow
-- control: per-tenant limits, usage windows, and the rate and weight state
-- of each tenant's turn row). Apply it with your migration tool, in one
-- transaction, before rolling out the release that reads version 2; the
-- names in braces are those of StateTables (pgstore.Migration renders
-- them). It refuses to run on any version but 1.
--
-- The leased index gains the tenant column (a capped tenant's live leases
-- are counted through it). DROP INDEX and CREATE INDEX lock the work table
-- while they run: on a large, busy table, build the new index first with
-- CREATE INDEX CONCURRENTLY under another name outside the transaction,
-- then drop the old one and rename the new one to {work}_leased.
DO $$
BEGIN
    IF (SELECT version FROM adk_schema) IS DISTINCT FROM 1 THEN
        RAISE EXCEPTION 'pgstore migration 002_flow_control: adk_schema.version is %, want 1', (SELECT version FROM adk_schema);
    END IF;
END
$$;

ALTER TABLE {turns}
    ADD COLUMN IF NOT EXISTS rate_tat double precision NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS credit   integer          NOT NULL DEFAULT 0;

DROP INDEX IF EXISTS {work}_leased;
CREATE INDEX IF NOT EXISTS {work}_leased ON {work} (queue, tenant) WHERE state = 'leased';

-- Flow control (schema version 2). Limits: one row per tenant that has
-- limits of its own in a queue, and the queue's default under tenant ''.
-- Every zero field limits nothing (weight 0 means 1, burst 0 means
-- ceil(rate)). SetLimits writes them and claims read them; a queue with
-- no row here is claimed exactly as in version 1.
CREATE TABLE IF NOT EXISTS {work}_limits (
    queue            text             NOT NULL,
    tenant           text             NOT NULL,
    max_leased       integer          NOT NULL DEFAULT 0,
    rate             double precision NOT NULL DEFAULT 0,
    burst            integer          NOT NULL DEFAULT 0,
    weight           integer          NOT NULL DEFAULT 0,
    budget_cost      bigint           NOT NULL DEFAULT 0,
    budget_tokens    bigint           NOT NULL DEFAULT 0,
    budget_window_ms bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant)
);
-- Usage charged to a tenant (Charge) under its budget, summed per slot
-- of the budget's window: at_ms is the slot's start in Unix milliseconds,
-- slot_ms its width (a tenth of the window). Only rows of the current
-- width count; a charge deletes the rows that have left the window and
-- those of another width (the window changed: the count starts afresh).
-- A tenant without a budget keeps no usage.
CREATE TABLE IF NOT EXISTS {work}_usage (
    queue       text   NOT NULL,
    tenant      text   NOT NULL,
    at_ms       bigint NOT NULL,
    slot_ms     bigint NOT NULL,
    cost_micros bigint NOT NULL DEFAULT 0,
    tokens      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, at_ms)
);
-- The live leases of one tenant: leased items whose lease has not expired
-- by p_now (an expired lease stops counting at its expiry, reaped or
-- not). A claim calls it for a capped tenant only after locking the
-- tenant's turn row, and it is VOLATILE so that, under READ COMMITTED,
-- its query takes a snapshot of its own at that moment instead of the
-- claim's, older one: it sees every lease a claim that held the lock
-- before committed (the pgstore README explains why the cap then holds).
CREATE OR REPLACE FUNCTION {work}_live_leases(p_queue text, p_tenant text, p_now timestamptz)
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE n integer;
BEGIN
    SELECT count(*) INTO n FROM {work} w
    WHERE w.queue = p_queue AND w.tenant = p_tenant AND w.state = 'leased' AND w.lease_expires_at > p_now;
    RETURN n;
END
$$;

UPDATE adk_schema SET version = 2 WHERE version = 1;
