-- Up-migration of a sqlitestore file from schema version 5 to version 6:
-- the data of kept run versions moves out of their rows into the table
-- adk_run_blobs. The library never runs it: apply it yourself, after a
-- backup, with the processes that use the file stopped, for example
--
--     sqlite3 -bail adk.db < 005_to_006.sql
--
-- It runs in one transaction, so a failure leaves the file at version 5.
-- A file at any version other than 5 is refused by the first statement (a
-- CHECK constraint fails), before anything is written.
--
-- adk_run_versions is built anew beside the old one and swapped in under
-- the old name: each version's row is copied as it is, except its data.
-- A version that holds data (any data but the empty blob X'', NULL for a
-- put of an empty run included) gets a row of adk_run_blobs with it, and
-- its blob column the n of that row; a version kept by a status patch
-- (data X'') holds none, and its blob is NULL. Every version reads as
-- before. Only the versions are copied: allow for the time and disk
-- space of one more copy of them. No other table changes.

BEGIN IMMEDIATE;

CREATE TEMP TABLE adk_migration_guard (from_version INTEGER CHECK (from_version = 5));
INSERT INTO adk_migration_guard SELECT version FROM adk_schema;
DROP TABLE adk_migration_guard;

CREATE TABLE adk_run_blobs (
    n    INTEGER PRIMARY KEY,
    data BLOB
);

-- The n of each version that holds data, numbered in key order.
CREATE TEMP TABLE adk_migration_blobs (
    tenant  TEXT    NOT NULL,
    id      TEXT    NOT NULL,
    version INTEGER NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (tenant, id, version)
) WITHOUT ROWID;
INSERT INTO adk_migration_blobs (tenant, id, version, n)
SELECT tenant, id, version, row_number() OVER (ORDER BY tenant, id, version)
FROM adk_run_versions WHERE data IS NOT X'';

INSERT INTO adk_run_blobs (n, data)
SELECT m.n, v.data
FROM adk_migration_blobs m JOIN adk_run_versions v ON v.tenant = m.tenant AND v.id = m.id AND v.version = m.version
ORDER BY m.n;

CREATE TABLE adk_run_versions_v6 (
    tenant        TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    session       TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT '',
    blob          INTEGER,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_micros   INTEGER NOT NULL DEFAULT 0,
    iterations    INTEGER NOT NULL DEFAULT 0,
    cursor        INTEGER NOT NULL DEFAULT 0,
    fence         INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant, id, version)
) WITHOUT ROWID;
INSERT INTO adk_run_versions_v6 (tenant, id, version, session, status, blob,
    input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
SELECT v.tenant, v.id, v.version, v.session, v.status, m.n,
    v.input_tokens, v.output_tokens, v.cost_micros, v.iterations, v.cursor, v.fence, v.updated_at
FROM adk_run_versions v LEFT JOIN adk_migration_blobs m ON m.tenant = v.tenant AND m.id = v.id AND m.version = v.version;

DROP TABLE adk_migration_blobs;
DROP TABLE adk_run_versions;
ALTER TABLE adk_run_versions_v6 RENAME TO adk_run_versions;

UPDATE adk_schema SET version = 6;

COMMIT;
