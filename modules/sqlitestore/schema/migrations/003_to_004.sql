-- Up-migration of a sqlitestore file from schema version 3 to version 4:
-- finished items and their history (retention per queue, the events of
-- each item and each queue's log, uniqueness windows, Find by ID). The
-- library never runs it: apply it yourself, after a backup, with the
-- processes that use the file stopped, for example
--
--     sqlite3 -bail adk.db < 003_to_004.sql
--
-- It runs in one transaction, so a failure leaves the file at version 3.
-- A file at any version other than 3 is refused by the first statement (a
-- CHECK constraint fails), before anything is written.
--
-- The new state completed needs a new CHECK constraint, which SQLite
-- cannot change in place, so adk_work is built anew beside the old one,
-- every row copied as it is (the new columns take their defaults, and a
-- cancelled item's finished_at is its cancelled_at), and swapped in under
-- the old name with its indexes. Three tables are new. Every row of
-- version 3 reads as before; no queue has a retention, so every queue
-- keeps and records what it did before. The copy rewrites the table:
-- allow for the time and disk space of one more copy of the items.

BEGIN IMMEDIATE;

CREATE TEMP TABLE adk_migration_guard (from_version INTEGER CHECK (from_version = 3));
INSERT INTO adk_migration_guard SELECT version FROM adk_schema;
DROP TABLE adk_migration_guard;

CREATE TABLE adk_work_v4 (
    queue            TEXT    NOT NULL,
    tenant           TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('queued', 'leased', 'waiting', 'dead', 'cancelled', 'completed')),
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
    -- The uniqueness window the item asked for, in nanoseconds (version 4).
    unique_for       INTEGER NOT NULL DEFAULT 0,
    -- When the item completed or was cancelled (0: it has not), and, for
    -- a completed item with a window, when its window closes.
    finished_at      INTEGER NOT NULL DEFAULT 0,
    unique_until     INTEGER NOT NULL DEFAULT 0,
    -- Heartbeats its leases received while its queue recorded events.
    heartbeats       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, id)
) WITHOUT ROWID;
INSERT INTO adk_work_v4 (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token, priority, snoozes, wait_signal, wait_since, wait_until, resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason, finished_at)
SELECT queue, tenant, id, state, seq, due_at, not_before, payload, metadata, attempts, last_error, enqueued_at, dead_at, worker, lease_expires_at, token, priority, snoozes, wait_signal, wait_since, wait_until, resumed_signal, resumed_payload, resumed_timed_out, resumed_at, cancelled_at, cancel_reason, CASE WHEN state = 'cancelled' THEN cancelled_at ELSE 0 END FROM adk_work;
DROP TABLE adk_work;
ALTER TABLE adk_work_v4 RENAME TO adk_work;
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
-- Finished items (version 4) by when they finished, for the Finished
-- listing and Prune; finished_at is set only when an item completes or is
-- cancelled, so a claim leaves the index alone. Completed items kept for
-- a uniqueness window, by when it closes, for the Prune of a queue that
-- keeps nothing else. (Find by ID alone probes the key once per tenant of
-- the queue's rotation: an index of every item by ID would cost each
-- enqueue and each complete one more tree to write.)
CREATE INDEX adk_work_finished ON adk_work (queue, finished_at, tenant, id) WHERE finished_at <> 0;
CREATE INDEX adk_work_unique ON adk_work (queue, unique_until) WHERE unique_until <> 0;

-- What a queue keeps of its finished items (version 4): a queue without
-- a row, or with a row of zeros, keeps nothing and records no event, as
-- before. age is in nanoseconds; events is the cap per item. finished
-- counts the queue's finished items (completed and cancelled) while the
-- row exists, for the count limit; log_seq numbers the queue's log.
CREATE TABLE adk_retention (
    queue    TEXT    PRIMARY KEY,
    age      INTEGER NOT NULL DEFAULT 0,
    count    INTEGER NOT NULL DEFAULT 0,
    events   INTEGER NOT NULL DEFAULT 0,
    finished INTEGER NOT NULL DEFAULT 0,
    log_seq  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- The events of each item (version 4), numbered from 1 per item: the
-- latest of them up to the queue's cap. They go with the item.
CREATE TABLE adk_events (
    queue    TEXT    NOT NULL,
    tenant   TEXT    NOT NULL,
    id       TEXT    NOT NULL,
    n        INTEGER NOT NULL,
    kind     TEXT    NOT NULL,
    at       INTEGER NOT NULL,
    worker   TEXT    NOT NULL DEFAULT '',
    attempt  INTEGER NOT NULL DEFAULT 0,
    token    INTEGER NOT NULL DEFAULT 0,
    error    TEXT    NOT NULL DEFAULT '',
    next_due INTEGER NOT NULL DEFAULT 0,
    signal   TEXT    NOT NULL DEFAULT '',
    reason   TEXT    NOT NULL DEFAULT '',
    run_time INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, id, n)
) WITHOUT ROWID;

-- Each queue's log of events (version 4), numbered by adk_retention's
-- log_seq: its latest 10000.
CREATE TABLE adk_event_log (
    queue    TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    tenant   TEXT    NOT NULL,
    id       TEXT    NOT NULL,
    kind     TEXT    NOT NULL,
    at       INTEGER NOT NULL,
    worker   TEXT    NOT NULL DEFAULT '',
    attempt  INTEGER NOT NULL DEFAULT 0,
    token    INTEGER NOT NULL DEFAULT 0,
    error    TEXT    NOT NULL DEFAULT '',
    next_due INTEGER NOT NULL DEFAULT 0,
    signal   TEXT    NOT NULL DEFAULT '',
    reason   TEXT    NOT NULL DEFAULT '',
    run_time INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, seq)
) WITHOUT ROWID;

UPDATE adk_schema SET version = 4;

COMMIT;
