-- The schema the sqlitestore adapters read, version 7 (the earlier
-- versions and the migrations from them, migrations/001_to_002.sql to
-- migrations/006_to_007.sql, sit beside it).
--
-- Open creates it in a new, empty file and verifies it in an existing one;
-- it never alters a file that holds another version. Times are INTEGER
-- nanoseconds since the Unix epoch, written from the injected clock, so
-- the driver never converts a time.

-- One row: the schema version this file was created with.
CREATE TABLE adk_schema (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    version   INTEGER NOT NULL
);
INSERT INTO adk_schema (singleton, version) VALUES (1, 7);

-- Counters handed out inside write transactions: 'token' (lease fencing
-- tokens) and 'seq' (the order of queued items and dead letters). A
-- committed value is durable (synchronous=FULL), so a token is never
-- issued twice, not even after a crash.
CREATE TABLE adk_counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO adk_counters (name, value) VALUES ('token', 0), ('seq', 0);

-- Runs. The counters are columns, so a patch adds in SQL. seq is the rowid
-- under AUTOINCREMENT: given once at creation, never reused, and listings
-- page by it. fence (version 5) is the highest lease token that has
-- written the run, 0 while only unfenced writes have.
CREATE TABLE adk_runs (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant        TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    session       TEXT    NOT NULL DEFAULT '',
    status        TEXT    NOT NULL DEFAULT '',
    data          BLOB,
    version       INTEGER NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_micros   INTEGER NOT NULL DEFAULT 0,
    iterations    INTEGER NOT NULL DEFAULT 0,
    cursor        INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    fence         INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX adk_runs_key ON adk_runs (tenant, id);
CREATE INDEX adk_runs_tenant_seq ON adk_runs (tenant, seq);
CREATE INDEX adk_runs_session_seq ON adk_runs (tenant, session, seq) WHERE session <> '';

-- Earlier versions of runs (version 5): each row is a run as it was
-- before a write replaced it, kept while the store's policy keeps it. The
-- run's seq and created_at never change, so they are read from adk_runs.
-- Writes delete the versions past the policy's bounds, a batch at a time;
-- a run's versions go with it. Version 6 keeps the data out of the row:
-- blob is the n of the adk_run_blobs row that holds it, NULL for a
-- version kept by a status patch, which holds no data of its own (a read
-- takes the data of the next newer version that holds some, or else the
-- run's), so the row of a version stays small, on its leaf page.
CREATE TABLE adk_run_versions (
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

-- The data of kept versions (version 6), one row for each version that
-- a put kept (NULL data: the run's data was empty), referenced by that
-- version's adk_run_versions.blob and by no other. A table of rowids: a
-- new row goes at the right edge of the tree, and a row of up to about
-- 4 KiB stays on its leaf page (a WITHOUT ROWID table keeps about 1 KiB
-- of a row there and spills the rest to an overflow page). A put whose run's oldest version is past the
-- policy's bounds moves that version's row to the version it keeps and
-- writes the data over its blob row, in place, so a run at its bound
-- neither adds nor deletes a row here; the prune and DeleteRun delete the
-- rows of the versions they delete.
CREATE TABLE adk_run_blobs (
    n    INTEGER PRIMARY KEY,
    data BLOB
);

-- Work items: queued, leased, waiting (for a signal), dead, cancelled or
-- completed. Version 3 added the lifecycle columns (priority to
-- cancel_reason) and the states waiting and cancelled; version 4 the
-- history columns (unique_for to heartbeats) and the state completed: a
-- completed item is deleted unless its queue's retention or its own
-- uniqueness window keeps it.
CREATE TABLE adk_work (
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

-- One row per queue: the rotation's stamp counter and the turn counter of
-- the recent-turns ring. Version 3 added what the claim reads of the
-- lifecycle controls from this same row: paused (the whole queue is
-- paused), paused_tenants (how many of its tenants are, listed in
-- adk_pauses) and wait_next (no wait of the queue times out before it;
-- NULL when none waits).
CREATE TABLE adk_queues (
    queue          TEXT    PRIMARY KEY,
    stamp          INTEGER NOT NULL DEFAULT 0,
    turn           INTEGER NOT NULL DEFAULT 0,
    paused         INTEGER NOT NULL DEFAULT 0,
    paused_tenants INTEGER NOT NULL DEFAULT 0,
    wait_next      INTEGER
) WITHOUT ROWID;

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

-- Paused tenants (version 3): a claim of a queue with paused_tenants > 0
-- passes these over, keeping their place in the rotation.
CREATE TABLE adk_pauses (
    queue  TEXT NOT NULL,
    tenant TEXT NOT NULL,
    PRIMARY KEY (queue, tenant)
) WITHOUT ROWID;

-- Tenant rotation: one row per tenant per queue. A claim serves the
-- tenant with the smallest stamp among those whose wake_at has come and
-- gives it a new stamp, which sends it to the back. wake_at is the
-- earliest due time of the tenant's queued items, NULL when it holds none,
-- so a tenant with nothing due costs a claim nothing.
--
-- Flow control (version 2) keeps two more numbers per tenant, read only by
-- the claims of a queue that has limits: credit, the items served in the
-- tenant's current turn (a tenant of weight w keeps its stamp until it
-- has been served w in a row), and tat, the tenant's rate bucket as a
-- theoretical arrival time in Unix microseconds (0: a full bucket).
--
-- Version 3 added ranked: 1 once an item with a priority other than 0
-- joined the tenant's queued items, back to 0 when the tenant holds none
-- (wake_at NULL). A claim serves a tenant that is not ranked by due time
-- alone, as before.
--
-- Version 7 added asleep: 1 when the statement that last set wake_at
-- set it later than its own time (the tenant holds queued items, none of
-- them due). A sleeping tenant is out of adk_turns_order, which claims
-- walk in stamp order, and in adk_turns_asleep by wake_at instead; each
-- claim first wakes (asleep 0) the sleeping tenants whose wake_at has
-- come. So a tenant whose items are all delayed costs a claim nothing
-- until one is due, and keeps its stamp, hence its place, meanwhile. A
-- row left awake with a wake_at ahead (the clock went back, a file
-- migrated from version 6) is walked and passed over, as before.
CREATE TABLE adk_turns (
    queue   TEXT    NOT NULL,
    tenant  TEXT    NOT NULL,
    stamp   INTEGER NOT NULL,
    wake_at INTEGER,
    served  INTEGER NOT NULL DEFAULT 0,
    credit  INTEGER NOT NULL DEFAULT 0,
    tat     REAL    NOT NULL DEFAULT 0,
    ranked  INTEGER NOT NULL DEFAULT 0,
    asleep  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant)
) WITHOUT ROWID;
CREATE INDEX adk_turns_order ON adk_turns (queue, stamp) WHERE wake_at IS NOT NULL AND asleep = 0;
CREATE INDEX adk_turns_asleep ON adk_turns (queue, wake_at) WHERE asleep = 1;

-- The latest turns of each queue, a ring of 1000 slots (turn mod 1000).
CREATE TABLE adk_recent (
    queue  TEXT    NOT NULL,
    slot   INTEGER NOT NULL,
    turn   INTEGER NOT NULL,
    tenant TEXT    NOT NULL,
    id     TEXT    NOT NULL,
    worker TEXT    NOT NULL,
    at     INTEGER NOT NULL,
    PRIMARY KEY (queue, slot)
) WITHOUT ROWID;

-- Flow-control limits (version 2): one row per tenant that has its own,
-- and the queue's default under the tenant ''. A queue without a row here
-- claims exactly as version 1 did. Zero columns limit nothing; the budget
-- window is in milliseconds.
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

-- Usage charged to a tenant (version 2), summed per slot of its budget's
-- window: start_ms is the first millisecond of the slot the charge fell
-- in. A budget counts the rows whose slot starts within its window.
CREATE TABLE adk_usage (
    queue       TEXT    NOT NULL,
    tenant      TEXT    NOT NULL,
    start_ms    INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, start_ms)
) WITHOUT ROWID;

-- Claim-check blobs: payloads too large to travel inline.
CREATE TABLE adk_blobs (
    tenant     TEXT    NOT NULL,
    ref        TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, ref)
) WITHOUT ROWID;
