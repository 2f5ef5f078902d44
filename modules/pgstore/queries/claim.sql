-- Claim a batch: $1 queue, $2 now, $3 max items, $4 worker, $5 lease expiry.
--
-- This is the claim of a queue without limits or pauses (no row in
-- {work}_limits or {work}_pauses): a queue that has any is claimed by
-- claim_flow.sql. The queue chooses
-- between the two from what its last claim said; should limits have been
-- set since, the rotation below is empty (one probe of the limits' primary
-- key, evaluated once) and the statement returns a single row that says
-- so, and the queue claims again with claim_flow.sql.
--
-- It is rendered four times (queries.go): in full; lean, for a queue that
-- records no events and holds no queued item with a priority, without
-- the events' CTEs and with one range per tenant's pick
-- (fragments/pick_plain.sql instead of pick_items.sql); without the
-- priority ranges alone, for a queue that records events; and without
-- the events' CTEs alone, for a queue with priorities. Each rendering but
-- the full one has an empty rotation when the queue needs more, and its
-- marker row then says what (fragments/lean_claim_row.sql).
--
-- pick walks the rotation round by round: round 1 offers every tenant, in
-- turn order, its first due item (in priority order: fragments/pick_items.sql); each later round offers each tenant
-- that was served in the round before its next one. The walk is lazy, so
-- LIMIT $3 stops it as soon as the batch is full, and a single busy tenant
-- fills the whole batch through its own rounds.
--
-- A later round hands each tenant a chunk of up to k items, and only the
-- last item of a chunk (last) carries the walk on. k is $3 - 1 when round
-- 1 found a single tenant with a due item (however many idle tenants the
-- rotation holds), which then fills its batch in two steps (its first
-- item, then one range of the index) instead of one recursive step per
-- item, locking no item it will not lease; it is 1 otherwise: with
-- several tenants the LIMIT would cut a round of chunks short in tenant
-- order, serving the first tenants several times before the last ones
-- once. Round 1 is a walk of the rotation cut at $3 items, so counting
-- its rows locks no item the lazy walk would not have locked.
--
-- Every item is locked where it is found, FOR UPDATE SKIP LOCKED, by a
-- query on the locked relation that states every predicate itself: when a
-- concurrent claim commits underneath, READ COMMITTED re-checks the
-- predicates on the new row version and the row is skipped, never taken
-- twice. Locks are taken on items only; nothing here waits for a lock, so
-- concurrent claims cannot deadlock.
WITH RECURSIVE
-- History (schema version 4): the queue's Retention.Events when it
-- records events, else no row; one probe of the retention's primary key.
ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
-- pos orders the rotation (turn_pos is below 1024: a claim serves at most
-- 1,000 tenants); tenants that share a pos are ordered by name. Read in
-- the order of the turns index, the rotation needs no sort. A parked
-- tenant (wake_at after now: nothing of it is due before then, see the
-- schema) keeps its place but is not probed.
rotation AS (
    SELECT t.tenant, t.turn_batch * 1024 + t.turn_pos AS pos
    FROM {turns} t
    WHERE t.queue = $1 AND t.wake_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {work}_limits l WHERE l.queue = $1)
      AND NOT EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1)
      {lean_guard}
    ORDER BY t.turn_batch, t.turn_pos, t.tenant
),
pick (round, pos, sub, last, k, tenant, id, due_at, seq, rank, row_id) AS (
    SELECT 1, f.pos, 1::bigint, true, CASE WHEN count(*) OVER () = 1 THEN greatest($3 - 1, 1) ELSE 1 END,
           f.tenant, f.id, f.due_at, f.seq, f.rank, f.ctid
    FROM (
        SELECT r.pos, r.tenant, w.id, w.due_at, w.seq, w.rank, w.ctid
        FROM rotation r
        CROSS JOIN LATERAL (SELECT r.tenant, -101 AS rank, '-infinity'::timestamptz AS due_at, 0::bigint AS seq, 1::bigint AS lim) a
        CROSS JOIN LATERAL ({claim_pick}) w
        LIMIT $3
    ) f
    UNION ALL
    SELECT p.round + 1, p.pos, c.sub, c.sub = c.cnt, p.k, p.tenant, c.id, c.due_at, c.seq, c.rank, c.ctid
    FROM pick p
    CROSS JOIN LATERAL (SELECT p.tenant, p.rank, p.due_at, p.seq, p.k::bigint AS lim) a
    CROSS JOIN LATERAL (
        -- The window functions number the chunk outside the locking
        -- queries (FOR UPDATE allows none at their level).
        SELECT w.*, row_number() OVER (ORDER BY w.rank, w.due_at, w.seq) AS sub, count(*) OVER () AS cnt
        FROM ({claim_pick}) w
    ) c
    WHERE p.last
),
picked AS (
    SELECT round, pos, sub, tenant, id, row_id FROM pick LIMIT $3
),
-- The picked rows are reached only through the TIDs their locks returned:
-- the ctid array is a TID scan whatever the plan, and no predicate here
-- (queue, state) matches an index, so no plan -- a generic one costed on
-- a table that was tiny when the statement was prepared, say -- can reach
-- the rows through adk_work_ready and filter the whole queue by ctid.
-- Leaving queue and state out is safe: every picked row was locked FOR
-- UPDATE by this statement in pick, where they were checked on the locked
-- version, so no other transaction can change the row (or vacuum the
-- tuple) before this UPDATE; tenant and id still tie each ctid to the key
-- pick found there.
leased AS (
    UPDATE {work} w
    SET state = 'leased', worker = $4, lease_expires_at = $5, token = nextval('{work}_token_seq'),
        claimed_at = $2, events = w.events + (SELECT count(*)::integer FROM ret)
    FROM picked p
    WHERE w.ctid = ANY (ARRAY(SELECT row_id FROM picked)) AND w.ctid = p.row_id
      AND w.tenant = p.tenant AND w.id = p.id
    RETURNING w.queue, w.tenant, w.id, w.state, w.payload, w.metadata, w.not_before, w.attempts, w.last_error, w.enqueued_at, w.dead_at, w.worker, w.lease_expires_at, w.token,
              w.priority, w.snoozes, w.wait_signal, w.wait_since, w.wait_until, w.resumed_signal, w.resumed_payload, w.resumed_timed_out, w.resumed_at, w.cancelled_at, w.cancel_reason, w.unique_for_us, w.finished_at, w.events,
              p.round, p.pos, p.sub
),
-- The claimed events, when the queue records them (the full and the
-- events renderings: fragments/claim_events.sql).
{events}
ordered AS (
    SELECT tenant, id, round, pos, row_number() OVER (ORDER BY round, pos, tenant, sub) AS ord
    FROM leased
),
-- Each served tenant goes to the back, in the order of its last turn in
-- this batch, and keeps its latest turns for the Inspector.
served AS (
    SELECT tenant, count(*) AS n,
           array_agg(id ORDER BY ord) AS ids,
           array_agg(ord ORDER BY ord) AS ords,
           row_number() OVER (ORDER BY max(round), min(pos), tenant) AS turn_pos
    FROM ordered
    GROUP BY tenant
),
-- Turn rows are locked in one order and a row another claimer is bumping
-- is skipped (its bump sends the tenant to the back anyway): a claim never
-- waits for a turn row. They are locked from the served tenants in name
-- order, one probe of the primary key each: written as
-- "WHERE tenant IN (SELECT tenant FROM served) ORDER BY tenant", the lock
-- was planned as a walk of the queue's whole rotation in key order (with
-- enable_sort off), 3.4 ms of a 4.5 ms claim of 10 with 1,000 tenants.
{bump_lock},
bump AS (
    UPDATE {turns} t
    SET turn_batch = b.n, turn_pos = s.turn_pos, served = t.served + s.n,
        {bump_recent}
    FROM served s, bump_lock l, batch b
    WHERE t.queue = $1 AND t.tenant = s.tenant AND l.tenant = s.tenant
)
-- The leases, unsorted: the queue orders them by round, pos, tenant and
-- sub (sortLeases in flow.go), which spares the plan a Sort node.
SELECT 'lease' AS kind, {item_columns}, round, pos, sub
FROM leased
UNION ALL
-- The queue has limits or pauses (set since this process last looked):
-- nothing was claimed, and this one row says to claim with
-- claim_flow.sql instead. The other renderings' row may say instead what
-- the queue needs that they leave out (fragments/lean_claim_row.sql).
SELECT {marker_kind}, $1, '', '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL,
       0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM {work}_limits l WHERE l.queue = $1) OR EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1){marker_more}
UNION ALL
-- Waits of the queue have timed out: the queue makes them due
-- (wait_timeouts.sql), and this row says so.
SELECT 'timeouts', $1, '', '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL,
       0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM {work} w WHERE w.queue = $1 AND w.state = 'waiting' AND w.due_at <= $2)
