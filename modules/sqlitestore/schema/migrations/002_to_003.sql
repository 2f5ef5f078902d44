-- Up-migration of a sqlitestore file from schema version 2 to version 3:
-- lifecycle controls (pause and resume, cancel, priorities, snoozes and
-- waits for a signal). The library never runs it: apply it yourself,
-- after a backup, with the processes that use the file stopped, for
-- example
--
--     sqlite3 -bail adk.db < 002_to_003.sql
--
-- It runs in one transaction, so a failure leaves the file at version 2.
-- A file at any version other than 2 is refused by the first statement (a
-- CHECK constraint fails), before anything is written.
--
-- SQLite cannot change a table's CHECK constraint in place, and the new
-- states need one, so adk_work is built anew beside the old one, every row
-- copied as it is (the new columns take their defaults: priority 0, never
-- snoozed, waited or cancelled), and swapped in under the old name with
-- its indexes. The other tables only gain columns and one new table. Every
-- row of version 2 reads as before. The copy rewrites the table: allow
-- for the time and disk space of one more copy of the items.

BEGIN IMMEDIATE;

CREATE TEMP TABLE adk_migration_guard (from_version INTEGER CHECK (from_version = 2));
INSERT INTO adk_migration_guard SELECT version FROM adk_schema;
DROP TABLE adk_migration_guard;

CREATE TABLE adk_work_v3 (
    queue            TEXT    NOT NULL,
    tenant           TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('queued', 'leased', 'waiting', 'dead', 'cancelled')),
    -- seq orders a tenant's items due at the same time, dead letters in
    -- the order they died and waiting items in the order they began to
    -- wait; renewed on each of those transitions.
    seq              INTEGER NOT NULL,
    due_at           INTEGER NOT NULL,
    not_before       INTEGER NOT NULL DEFAULT 0,
    payload          BLOB,
    metadata         TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT    NOT NULL DEFAULT '',
    enqueued_at      INTEGER NOT NULL,
    dead_at          INTEGER NOT NULL DEFAULT 0,
    worker           TEXT    NOT NULL DEFAULT '',
    lease_expires_at INTEGER NOT NULL DEFAULT 0,
    token            INTEGER NOT NULL DEFAULT 0,
    priority         INTEGER NOT NULL DEFAULT 0,
    snoozes          INTEGER NOT NULL DEFAULT 0,
    -- While waiting: the signal awaited, since when and until when.
    wait_signal      TEXT    NOT NULL DEFAULT '',
    wait_since       INTEGER NOT NULL DEFAULT 0,
    wait_until       INTEGER NOT NULL DEFAULT 0,
    -- How the last wait ended (resumed_at 0: the item never waited).
    resumed_signal   TEXT    NOT NULL DEFAULT '',
    resumed_payload  BLOB,
    resumed_timed_out INTEGER NOT NULL DEFAULT 0,
    resumed_at       INTEGER NOT NULL DEFAULT 0,
    -- When the item was cancelled, or, while it is leased, when a cancel
    -- marked its lease (0: never).
    cancelled_at     INTEGER NOT NULL DEFAULT 0,
    cancel_reason    TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (queue, tenant, id)
) WITHOUT ROWID;
INSERT INTO adk_work_v3 (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token)
SELECT queue, tenant, id, state, seq, due_at, not_before, payload, metadata, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token FROM adk_work;
DROP TABLE adk_work;
ALTER TABLE adk_work_v3 RENAME TO adk_work;
-- One tenant's queued items by priority, then due time, then order: a
-- claim reads the head of priority 0 (every item of a tenant that uses no
-- priority), or the first due item of the whole of it, and a tenant's
-- first due time level by level of the priorities it uses.
CREATE INDEX adk_work_ready ON adk_work (queue, tenant, priority DESC, due_at, seq) WHERE state = 'queued';
-- Leases by expiry, for Reap, the lease listing and the live leases a
-- claim counts against tenants' caps (the tenant is in every index entry,
-- as part of the key).
CREATE INDEX adk_work_leased ON adk_work (queue, lease_expires_at, token) WHERE state = 'leased';
-- Dead letters in the order they died, for paging.
CREATE INDEX adk_work_dead ON adk_work (queue, seq) WHERE state = 'dead';
-- Waiting items in the order they began to wait (the Waiting listing),
-- and by when their waits time out (the claim ends those). wait_until is
-- not 0 exactly while an item waits; a claim, which sets state but never
-- wait_until, leaves these two indexes alone. (PurgeCancelled, an
-- operator's call, reads the queue's rows and needs no index.)
CREATE INDEX adk_work_waiting ON adk_work (queue, seq) WHERE wait_until <> 0;
CREATE INDEX adk_work_timeouts ON adk_work (queue, wait_until) WHERE wait_until <> 0;

ALTER TABLE adk_turns ADD COLUMN ranked INTEGER NOT NULL DEFAULT 0;

ALTER TABLE adk_queues ADD COLUMN paused         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE adk_queues ADD COLUMN paused_tenants INTEGER NOT NULL DEFAULT 0;
ALTER TABLE adk_queues ADD COLUMN wait_next      INTEGER;

CREATE TABLE adk_pauses (
    queue  TEXT NOT NULL,
    tenant TEXT NOT NULL,
    PRIMARY KEY (queue, tenant)
) WITHOUT ROWID;

UPDATE adk_schema SET version = 3;

COMMIT;
