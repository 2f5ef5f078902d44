-- Up-migration of a sqlitestore file from schema version 4 to version 5:
-- fenced run writes and run versions. The library never runs it: apply it
-- yourself, after a backup, with the processes that use the file stopped,
-- for example
--
--     sqlite3 -bail adk.db < 004_to_005.sql
--
-- It runs in one transaction, so a failure leaves the file at version 4.
-- A file at any version other than 4 is refused by the first statement (a
-- CHECK constraint fails), before anything is written.
--
-- It only adds: the column fence of adk_runs (0 for every run, which is
-- what a run that only unfenced writes have touched holds) and the table
-- adk_run_versions, empty. Adding a column with a constant default
-- rewrites no row, so the migration takes about the same time whatever
-- the file holds. Every row of version 4 reads as before.

BEGIN IMMEDIATE;

CREATE TEMP TABLE adk_migration_guard (from_version INTEGER CHECK (from_version = 4));
INSERT INTO adk_migration_guard SELECT version FROM adk_schema;
DROP TABLE adk_migration_guard;

ALTER TABLE adk_runs ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;

CREATE TABLE adk_run_versions (
    tenant        TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    session       TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT '',
    data          BLOB,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_micros   INTEGER NOT NULL DEFAULT 0,
    iterations    INTEGER NOT NULL DEFAULT 0,
    cursor        INTEGER NOT NULL DEFAULT 0,
    fence         INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant, id, version)
) WITHOUT ROWID;

UPDATE adk_schema SET version = 5;

COMMIT;
