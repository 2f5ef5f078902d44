-- Up-migration of a sqlitestore file from schema version 1 to version 2:
-- flow control (tenant limits, rate buckets, weighted turns and budget
-- usage). The library never runs it: apply it yourself, after a backup,
-- with the processes that use the file stopped, for example
--
--     sqlite3 -bail adk.db < 001_to_002.sql
--
-- It runs in one transaction, so a failure leaves the file at version 1.
-- It only adds: no row of version 1 changes but adk_schema's. A file at
-- any version other than 1 is refused by the first statement (a CHECK
-- constraint fails), before anything is written.

BEGIN IMMEDIATE;

CREATE TEMP TABLE adk_migration_guard (from_version INTEGER CHECK (from_version = 1));
INSERT INTO adk_migration_guard SELECT version FROM adk_schema;
DROP TABLE adk_migration_guard;

ALTER TABLE adk_turns ADD COLUMN credit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE adk_turns ADD COLUMN tat    REAL    NOT NULL DEFAULT 0;

CREATE TABLE adk_limits (
    queue            TEXT    NOT NULL,
    tenant           TEXT    NOT NULL,
    max_leased       INTEGER NOT NULL DEFAULT 0,
    rate             REAL    NOT NULL DEFAULT 0,
    burst            INTEGER NOT NULL DEFAULT 0,
    weight           INTEGER NOT NULL DEFAULT 0,
    budget_cost      INTEGER NOT NULL DEFAULT 0,
    budget_tokens    INTEGER NOT NULL DEFAULT 0,
    budget_window_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant)
) WITHOUT ROWID;
-- The rows that set a cap, and those that set a budget: a claim asks
-- whether any applies in its queue with one probe of these, however many
-- tenants have limits.
CREATE INDEX adk_limits_capped ON adk_limits (queue) WHERE max_leased > 0;
CREATE INDEX adk_limits_budgeted ON adk_limits (queue) WHERE budget_window_ms > 0;

CREATE TABLE adk_usage (
    queue       TEXT    NOT NULL,
    tenant      TEXT    NOT NULL,
    start_ms    INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, start_ms)
) WITHOUT ROWID;

UPDATE adk_schema SET version = 2;

COMMIT;
