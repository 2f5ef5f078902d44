-- Up-migration of a sqlitestore file from schema version 6 to version 7:
-- tenants whose queued items are all delayed leave the index claims walk
-- until one is due. The library never runs it: apply it yourself, after
-- a backup, with the processes that use the file stopped, for example
--
--     sqlite3 -bail adk.db < 006_to_007.sql
--
-- It runs in one transaction, so a failure leaves the file at version 6.
-- A file at any version other than 6 is refused by the first statement (a
-- CHECK constraint fails), before anything is written.
--
-- It adds the column asleep of adk_turns, 0 for every row: each tenant
-- stays in the walk, as in version 6, until the next write of its wake
-- time puts it to sleep when none of its items is due. Adding a column
-- with a constant default rewrites no row. adk_turns_order is built
-- anew without the sleeping tenants (none yet), and adk_turns_asleep,
-- empty, beside it: the time of one pass over the rotation.

BEGIN IMMEDIATE;

CREATE TEMP TABLE adk_migration_guard (from_version INTEGER CHECK (from_version = 6));
INSERT INTO adk_migration_guard SELECT version FROM adk_schema;
DROP TABLE adk_migration_guard;

ALTER TABLE adk_turns ADD COLUMN asleep INTEGER NOT NULL DEFAULT 0;
DROP INDEX adk_turns_order;
CREATE INDEX adk_turns_order ON adk_turns (queue, stamp) WHERE wake_at IS NOT NULL AND asleep = 0;
CREATE INDEX adk_turns_asleep ON adk_turns (queue, wake_at) WHERE asleep = 1;

UPDATE adk_schema SET version = 7;

COMMIT;
