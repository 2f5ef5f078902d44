-- Up-migration of the pgstore schema from version 3 to version 4
-- (history: retention of finished items, per-item events and a queue
-- event log, uniqueness windows). Apply it with your migration tool, in
-- one transaction, before rolling out the release that reads version 4;
-- the names in braces are those of StateTables (pgstore.Migration renders
-- them). It refuses to run on any version but 3.
--
-- ADD COLUMN with a constant default rewrites nothing (PostgreSQL 11 and
-- later). Replacing the state check validates every row; the cancelled
-- rows get their finished_at from cancelled_at, and the new partial index
-- holds only them. On a large, busy table build {work}_finished first
-- with CREATE INDEX CONCURRENTLY outside the transaction.
DO $$
BEGIN
    IF (SELECT version FROM adk_schema) IS DISTINCT FROM 3 THEN
        RAISE EXCEPTION 'pgstore migration 004_history: adk_schema.version is %, want 3', (SELECT version FROM adk_schema);
    END IF;
END
$$;

ALTER TABLE {work}
    ADD COLUMN IF NOT EXISTS finished_at   timestamptz,
    ADD COLUMN IF NOT EXISTS unique_for_us bigint  NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS unique_until  timestamptz,
    ADD COLUMN IF NOT EXISTS claimed_at    timestamptz,
    ADD COLUMN IF NOT EXISTS events        integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS heartbeats    bigint  NOT NULL DEFAULT 0;

ALTER TABLE {work} DROP CONSTRAINT IF EXISTS {work}_state_check;
ALTER TABLE {work} ADD CONSTRAINT {work}_state_check CHECK (state IN ('queued', 'leased', 'dead', 'waiting', 'cancelled', 'completed'));

UPDATE {work} SET finished_at = cancelled_at WHERE state = 'cancelled' AND finished_at IS NULL;

CREATE INDEX IF NOT EXISTS {work}_finished ON {work} (queue, finished_at, tenant, id) WHERE finished_at IS NOT NULL;

-- History (schema version 4). Retention: one row per queue that keeps
-- something (contract.Retention; a queue without a row keeps nothing).
-- Every statement that records a transition reads it in the statement
-- (one probe of the primary key), so a change by any process applies to
-- the next transition of every other. log_trimmed is the highest event
-- seq Prune has dropped from the queue's log, for QueueEvents' gaps.
CREATE TABLE IF NOT EXISTS {work}_retention (
    queue       text    NOT NULL PRIMARY KEY,
    age_us      bigint  NOT NULL DEFAULT 0,
    keep_count  integer NOT NULL DEFAULT 0,
    events      integer NOT NULL DEFAULT 0,
    log_trimmed bigint  NOT NULL DEFAULT 0
);
-- Event seqs are drawn from one sequence: they order a queue's log and
-- key an item's events.
CREATE SEQUENCE IF NOT EXISTS {work}_event_seq;
-- An item's events, written in the statement of the transition they
-- record; n numbers them within the item's life (the item's events
-- column is the latest n). They go with the item.
CREATE TABLE IF NOT EXISTS {work}_events (
    queue       text        NOT NULL,
    tenant      text        NOT NULL,
    id          text        NOT NULL,
    seq         bigint      NOT NULL,
    n           integer     NOT NULL,
    kind        text        NOT NULL,
    at          timestamptz NOT NULL,
    worker      text        NOT NULL DEFAULT '',
    attempt     integer     NOT NULL DEFAULT 0,
    token       bigint      NOT NULL DEFAULT 0,
    error       text        NOT NULL DEFAULT '',
    next_due    timestamptz,
    signal      text        NOT NULL DEFAULT '',
    reason      text        NOT NULL DEFAULT '',
    run_time_us bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, id, seq)
);
-- A queue's event log: the same events, by seq, trimmed by Prune to the
-- latest QueueEventLog.
CREATE TABLE IF NOT EXISTS {work}_log (
    queue       text        NOT NULL,
    seq         bigint      NOT NULL,
    tenant      text        NOT NULL,
    id          text        NOT NULL,
    kind        text        NOT NULL,
    at          timestamptz NOT NULL,
    worker      text        NOT NULL DEFAULT '',
    attempt     integer     NOT NULL DEFAULT 0,
    token       bigint      NOT NULL DEFAULT 0,
    error       text        NOT NULL DEFAULT '',
    next_due    timestamptz,
    signal      text        NOT NULL DEFAULT '',
    reason      text        NOT NULL DEFAULT '',
    run_time_us bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, seq)
);

UPDATE adk_schema SET version = 4 WHERE version = 3;
