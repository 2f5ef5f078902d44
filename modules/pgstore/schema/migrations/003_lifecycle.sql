-- Up-migration of the pgstore schema from version 2 to version 3
-- (lifecycle controls: priorities, pauses, cancels, snoozes and waits for
-- a signal). Apply it with your migration tool, in one transaction,
-- before rolling out the release that reads version 3; the names in
-- braces are those of StateTables (pgstore.Migration renders them). It
-- refuses to run on any version but 2.
--
-- ADD COLUMN with a constant default rewrites nothing (PostgreSQL 11 and
-- later). Replacing the state check validates every row, and CREATE INDEX
-- locks the work table while it runs; the new partial indexes start
-- empty on a version 2 table (no row has a priority, waits or is
-- cancelled), so they build in one pass of the table. On a large, busy
-- table build them first with CREATE INDEX CONCURRENTLY outside the
-- transaction.
DO $$
BEGIN
    IF (SELECT version FROM adk_schema) IS DISTINCT FROM 2 THEN
        RAISE EXCEPTION 'pgstore migration 003_lifecycle: adk_schema.version is %, want 2', (SELECT version FROM adk_schema);
    END IF;
END
$$;

ALTER TABLE {work}
    ADD COLUMN IF NOT EXISTS priority          integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS snoozes           integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS wait_signal       text,
    ADD COLUMN IF NOT EXISTS wait_since        timestamptz,
    ADD COLUMN IF NOT EXISTS wait_until        timestamptz,
    ADD COLUMN IF NOT EXISTS resumed_signal    text,
    ADD COLUMN IF NOT EXISTS resumed_payload   bytea,
    ADD COLUMN IF NOT EXISTS resumed_timed_out boolean,
    ADD COLUMN IF NOT EXISTS resumed_at        timestamptz,
    ADD COLUMN IF NOT EXISTS cancelled_at      timestamptz,
    ADD COLUMN IF NOT EXISTS cancel_reason     text;

ALTER TABLE {work} DROP CONSTRAINT IF EXISTS {work}_state_check;
ALTER TABLE {work} ADD CONSTRAINT {work}_state_check CHECK (state IN ('queued', 'leased', 'dead', 'waiting', 'cancelled'));

CREATE INDEX IF NOT EXISTS {work}_ready_pri ON {work} (queue, tenant, (-priority), due_at, seq) WHERE state = 'queued' AND priority <> 0;
CREATE INDEX IF NOT EXISTS {work}_waits ON {work} (queue, due_at) WHERE state = 'waiting';
CREATE INDEX IF NOT EXISTS {work}_cancelled ON {work} (queue, cancelled_at) WHERE state = 'cancelled';

CREATE TABLE IF NOT EXISTS {work}_pauses (
    queue     text        NOT NULL,
    tenant    text        NOT NULL,
    paused_at timestamptz NOT NULL,
    PRIMARY KEY (queue, tenant)
);

UPDATE adk_schema SET version = 3 WHERE version = 2;
