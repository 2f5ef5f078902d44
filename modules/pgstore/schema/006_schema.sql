-- The schema the pgstore adapters read, version 6: version 1, plus flow
-- control (version 2: schema/migrations/002_flow_control.sql brings a
-- version 1 database there), plus lifecycle controls (version 3:
-- schema/migrations/003_lifecycle.sql), plus history: retention of
-- finished items, events and uniqueness windows (version 4:
-- schema/migrations/004_history.sql), plus fenced runs and run versions
-- (version 5: schema/migrations/005_run_versions.sql), plus the claim
-- indexes split by priority (version 6:
-- schema/migrations/006_ready_by_priority.sql brings a version 5 database
-- here).
--
-- The deployment owns this schema: apply it with the migration tool you
-- already run (or `adkctl schema apply` in development). The library
-- reads it and never alters it. The names in braces are the table names
-- of StateTables; ExpectedSchema renders them with the defaults.

-- One row, the schema version this database was migrated to. Verify
-- refuses a version the library was not written for.
CREATE TABLE IF NOT EXISTS adk_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version   integer NOT NULL
);
INSERT INTO adk_schema (version) VALUES (6) ON CONFLICT (singleton) DO NOTHING;

-- Runs. The counters are columns, so a patch is
-- "SET input_tokens = input_tokens + $n" and concurrent patches all land.
-- seq is given once at creation and never rewritten: listings page by it.
CREATE TABLE IF NOT EXISTS {runs} (
    tenant        text        NOT NULL,
    id            text        NOT NULL,
    seq           bigserial   NOT NULL,
    session       text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT '',
    -- The blob exactly as written (bytea keeps the caller's bytes; jsonb
    -- would reorder keys).
    data          bytea,
    version       bigint      NOT NULL,
    input_tokens  bigint      NOT NULL DEFAULT 0,
    output_tokens bigint      NOT NULL DEFAULT 0,
    cost_micros   bigint      NOT NULL DEFAULT 0,
    iterations    bigint      NOT NULL DEFAULT 0,
    cursor        bigint      NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    -- Fenced runs (schema version 5): the highest fence (lease token)
    -- that has written the run, 0 when only unfenced writes have.
    fence         bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS {runs}_tenant_seq ON {runs} (tenant, seq);
CREATE INDEX IF NOT EXISTS {runs}_session_seq ON {runs} (tenant, session, seq) WHERE session <> '';
-- Run versions (schema version 5): the runs as they were before each
-- write that kept a version (RunPolicy), written in the statement of that
-- write while it holds the run's row lock. The run's seq and created_at
-- are the run's own (a deleted run takes its versions with it), so they
-- are not repeated here. Writes prune a run's versions oldest first along
-- the primary key, at most contract.VersionPruneBatch a write.
CREATE TABLE IF NOT EXISTS {runs}_versions (
    tenant        text        NOT NULL,
    id            text        NOT NULL,
    version       bigint      NOT NULL,
    session       text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT '',
    data          bytea,
    input_tokens  bigint      NOT NULL DEFAULT 0,
    output_tokens bigint      NOT NULL DEFAULT 0,
    cost_micros   bigint      NOT NULL DEFAULT 0,
    iterations    bigint      NOT NULL DEFAULT 0,
    cursor        bigint      NOT NULL DEFAULT 0,
    fence         bigint      NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant, id, version)
);
-- Deletes every version of a run. A delete of the run calls it after the
-- run's row is deleted (so after every writer that held the row lock
-- before it has committed), and it is VOLATILE so that, under READ
-- COMMITTED, its DELETE takes a snapshot of its own at that moment
-- instead of the calling statement's, older one: it sees the versions
-- those writers committed (the pgstore README explains why none is left).
CREATE OR REPLACE FUNCTION {runs}_drop_versions(p_tenant text, p_id text)
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE n integer;
BEGIN
    DELETE FROM {runs}_versions v WHERE v.tenant = p_tenant AND v.id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Work items. A row is queued, leased, waiting for a signal, in the dead
-- letter (state 'dead'), cancelled (kept for the record until
-- PurgeCancelled or Prune) or completed (kept only under its queue's
-- retention or its own uniqueness window, until Prune); a completed item
-- that is kept for neither is deleted.
--
-- Every claim, heartbeat and settle rewrites a row here, so the table
-- collects dead tuples faster than any other: autovacuum runs it at 1%
-- dead rows with no cost delay, and the fillfactor leaves room on each
-- page for HOT updates. Keep these settings if you rewrite the migration.
CREATE SEQUENCE IF NOT EXISTS {work}_seq;
-- Lease tokens come from a sequence: nextval is never rolled back, so a
-- token is never issued twice, not even after an aborted claim.
CREATE SEQUENCE IF NOT EXISTS {work}_token_seq;
CREATE TABLE IF NOT EXISTS {work} (
    queue            text        NOT NULL,
    tenant           text        NOT NULL,
    id               text        NOT NULL,
    state            text        NOT NULL CHECK (state IN ('queued', 'leased', 'dead', 'waiting', 'cancelled', 'completed')),
    -- seq orders a tenant's items first in, first out among equal due
    -- times, and dead letters in the order they died; it is renewed on
    -- each of those transitions.
    seq              bigint      NOT NULL DEFAULT nextval('{work}_seq'),
    -- due_at is when the item may be claimed: its NotBefore, or now when
    -- that is zero or past, or the retry time the policy chose.
    due_at           timestamptz NOT NULL,
    not_before       timestamptz,
    payload          bytea,
    metadata         jsonb,
    attempts         integer     NOT NULL DEFAULT 0,
    last_error       text        NOT NULL DEFAULT '',
    enqueued_at      timestamptz NOT NULL,
    dead_at          timestamptz,
    worker           text,
    lease_expires_at timestamptz,
    token            bigint,
    -- Lifecycle controls (schema version 3). priority orders a tenant's
    -- due items (higher first); snoozes counts Snooze calls. While
    -- waiting, wait_* say for what and until when (due_at is then the
    -- timeout); resumed_* say how the last wait ended. cancelled_at is
    -- set on a cancelled row, and on a leased row whose cancel is pending
    -- (the holder's next call settles it).
    priority          integer     NOT NULL DEFAULT 0,
    snoozes           integer     NOT NULL DEFAULT 0,
    wait_signal       text,
    wait_since        timestamptz,
    wait_until        timestamptz,
    resumed_signal    text,
    resumed_payload   bytea,
    resumed_timed_out boolean,
    resumed_at        timestamptz,
    cancelled_at      timestamptz,
    cancel_reason     text,
    -- History (schema version 4). finished_at is when the item completed
    -- or was cancelled; unique_for_us is the item's uniqueness window and
    -- unique_until its end, set when it completes. claimed_at is when its
    -- current lease was claimed (a completion's run time). events counts
    -- the events recorded of its current life (the number of the latest:
    -- {work}_events keeps those above events - Retention.Events) and
    -- heartbeats the heartbeats counted while events were recorded.
    finished_at       timestamptz,
    unique_for_us     bigint      NOT NULL DEFAULT 0,
    unique_until      timestamptz,
    claimed_at        timestamptz,
    events            integer     NOT NULL DEFAULT 0,
    heartbeats        bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant, id)
) WITH (
    fillfactor = 75,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_cost_delay = 0
);
-- The claim index: one tenant's due items of priority 0 in order (every
-- item of a queue that uses no priorities). Partial on the queued state,
-- so leased and dead rows do not bloat it, and (schema version 6) on
-- priority 0, so the claim's walk of the priority-0 items never passes
-- over items with a priority, which {work}_ready_pri and
-- {work}_ready_due hold.
CREATE INDEX IF NOT EXISTS {work}_ready ON {work} (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority = 0;
-- Leased rows by queue and tenant, for Reap, the lease listing and a
-- capped tenant's live leases ({work}_live_leases). The lease columns
-- (lease_expires_at, token, worker) are deliberately in no index: a
-- heartbeat changes only those, so it stays a HOT update that writes no
-- index entry. Reap filters the few leased rows of a queue on expiry.
CREATE INDEX IF NOT EXISTS {work}_leased ON {work} (queue, tenant) WHERE state = 'leased';
-- Dead letters, oldest first, for paging.
CREATE INDEX IF NOT EXISTS {work}_dead ON {work} (queue, seq) WHERE state = 'dead';
-- Lifecycle (schema version 3). The claim order of a tenant's due items
-- with a priority other than 0 (highest first, then due time, then seq):
-- the claim takes them from here before and after the priority-0 items it
-- takes from {work}_ready, so a queue whose items all have priority 0
-- keeps this index empty and pays one probe of it per tenant served.
CREATE INDEX IF NOT EXISTS {work}_ready_pri ON {work} (queue, tenant, (-priority), due_at, seq) WHERE state = 'queued' AND priority <> 0;
-- The same items by due time alone (schema version 6), for the
-- statements that read a tenant's earliest queued item (parking, the flow
-- claim's look at a held tenant, the Inspector's order): they take the
-- earlier of this index's first entry and {work}_ready's. Empty, and one
-- probe, on a queue without priorities.
CREATE INDEX IF NOT EXISTS {work}_ready_due ON {work} (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority <> 0;
-- Waiting items by timeout, for the claim's look for timed-out waits and
-- the Waiting listing.
CREATE INDEX IF NOT EXISTS {work}_waits ON {work} (queue, due_at) WHERE state = 'waiting';
-- Cancelled items by when, for PurgeCancelled.
CREATE INDEX IF NOT EXISTS {work}_cancelled ON {work} (queue, cancelled_at) WHERE state = 'cancelled';
-- History (schema version 4). Finished items (completed and cancelled) by
-- when they finished, for Prune (oldest first) and the Finished listing
-- (newest first). Partial: a queued, leased, waiting or dead row has no
-- finished_at, so the claim path writes no entry here, and a queue
-- without retention deletes its completed items without one.
CREATE INDEX IF NOT EXISTS {work}_finished ON {work} (queue, finished_at, tenant, id) WHERE finished_at IS NOT NULL;

-- Tenant rotation: one row per tenant per queue, ordered by the turn last
-- given (turn_batch, turn_pos). A claim serves tenants from the front and
-- sends them to the back. Claims lock work items, not these rows; the bump
-- skips a row another claimer is bumping at that instant. The exception
-- is a tenant with flow-control limits: a claim locks its row (SKIP
-- LOCKED) before serving it, so one claim at a time serves it.
--
-- wake_at parks a tenant that has nothing due: claims pass over its row
-- until then, so a tenant whose items are all delayed (or that holds
-- none) costs a claim nothing. It is never later than the earliest due
-- time of the tenant's queued items: a claim parks a tenant under the
-- exclusive per-tenant lock, and everything that makes an item due lowers
-- it under the shared one.
CREATE SEQUENCE IF NOT EXISTS {turns}_seq;
CREATE TABLE IF NOT EXISTS {turns} (
    queue       text        NOT NULL,
    tenant      text        NOT NULL,
    turn_batch  bigint      NOT NULL DEFAULT 0,
    turn_pos    integer     NOT NULL DEFAULT 0,
    served      bigint      NOT NULL DEFAULT 0,
    -- The tenant's latest 32 turns (item, worker, time, and an order key:
    -- turn_batch * 1024 + place in the batch), for the Inspector.
    recent_ids     text[]        NOT NULL DEFAULT '{}',
    recent_workers text[]        NOT NULL DEFAULT '{}',
    recent_at      timestamptz[] NOT NULL DEFAULT '{}',
    recent_keys    bigint[]      NOT NULL DEFAULT '{}',
    wake_at        timestamptz   NOT NULL DEFAULT '-infinity',
    -- Flow control (see {work}_limits): the tenant's rate bucket as a
    -- theoretical arrival time in Unix microseconds (0: full), and the
    -- items it was served in its current turn (its weight's credit).
    -- Only a claim that holds this row locked changes them.
    rate_tat       double precision NOT NULL DEFAULT 0,
    credit         integer          NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, tenant)
) WITH (fillfactor = 75, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0);
CREATE INDEX IF NOT EXISTS {turns}_order ON {turns} (queue, turn_batch, turn_pos, tenant);

-- Claim-check blobs: payloads too large to travel inline.
CREATE TABLE IF NOT EXISTS {blobs} (
    tenant     text        NOT NULL,
    ref        text        NOT NULL,
    data       bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, ref)
);

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

-- Pauses (schema version 3): a row per paused tenant of a queue, and the
-- queue's own pause under tenant ''. A queue with a row here is claimed
-- by claim_flow.sql, which passes paused tenants over (a paused queue
-- claims nothing); Pause inserts, Resume deletes.
CREATE TABLE IF NOT EXISTS {work}_pauses (
    queue     text        NOT NULL,
    tenant    text        NOT NULL,
    paused_at timestamptz NOT NULL,
    PRIMARY KEY (queue, tenant)
);

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
