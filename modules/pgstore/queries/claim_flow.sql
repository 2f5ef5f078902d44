-- Claim a batch on a queue that has limits (queries/claim.sql is the claim
-- of a queue without any): $1 queue, $2 now, $3 max items, $4 worker,
-- $5 lease expiry, $6 now in Unix microseconds, $7 now in Unix
-- milliseconds, $8 whether to report the tenants held back.
--
-- The walk is claim.sql's (read its comments first): the rotation round
-- by round, items locked where they are found FOR UPDATE SKIP LOCKED with
-- every predicate stated on the locked relation. What differs is a tenant
-- that has limits, its own row in {work}_limits or the queue's default
-- ("gated" below), and pauses: a paused tenant is passed over as a held
-- one is, keeping its place (and reported held for "paused"), and a
-- paused queue claims nothing. A tenant without any is walked as
-- claim.sql walks it, for one more index probe (its limits).
--
-- A gated tenant's turn row is locked, FOR UPDATE SKIP LOCKED, when the
-- tenant first comes up, and stays locked to commit, so two claims never
-- serve one gated tenant at once: the second skips it, as it skips an
-- item another claim holds. Under the lock the claim reads the row's rate
-- bucket and weight credit (a locking read returns the row's latest
-- version) and the tenant's live leases, counted one of two ways (the
-- README says why the cap holds with either):
--
--   - from the statement's snapshot, when the row the lock returned is the
--     version that snapshot holds (same ctid) and that count leaves room
--     for the whole batch: every claim that serves a gated tenant rewrites
--     its turn row before it commits, so no claim has served the tenant
--     since the snapshot was taken, and the leases of those before are in
--     it;
--   - otherwise with {work}_live_leases, a VOLATILE function whose query
--     takes a snapshot of its own, after the lock was granted: it sees
--     every lease that an earlier holder of the lock committed. The
--     function is called on the locked row's columns, so it cannot run
--     before the lock.
--
-- From those the claim works out the tenant's room in items: its cap less
-- its live leases, the tokens in its bucket, none when it is over budget.
-- The first of them that leaves no room (cap, rate, budget, in that order)
-- holds the tenant: it is passed over, none of its items is locked, its
-- turn row is not changed, and the walk goes on with the others. A tenant
-- the statement's snapshot already shows held is passed over before its
-- row is locked (see gate). Each
-- chunk it is served is cut to the room left, so a claim that brings it
-- to its cap or empties its bucket mid-batch stops serving it there.
--
-- Weight w: a gated tenant's chunk is the rest of its turn (w - credit in
-- its first round, w in later ones, or the whole batch when it is the
-- only tenant with work); it goes to the back of the rotation when its
-- served items complete a turn, and otherwise keeps its place and the
-- credit. For w = 1 that is claim.sql's behaviour.
WITH RECURSIVE
-- History (schema version 4): the queue's Retention.Events when it
-- records events, else no row; one probe of the retention's primary key.
ret AS (
    SELECT r.events AS keep FROM {work}_retention r WHERE r.queue = $1 AND r.events > 0
),
dflt AS MATERIALIZED (
    SELECT max_leased, rate, burst, weight, budget_cost, budget_tokens, budget_window_ms
    FROM {work}_limits WHERE queue = $1 AND tenant = ''
),
-- Whether any tenant of the queue is paused: one probe, so that on a
-- queue with limits and no paused tenant (the common case) a tenant the
-- walk reaches is not probed for a pause of its own as well.
tpaused AS MATERIALIZED (
    SELECT EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant <> '') AS p
),
-- The rotation with each tenant's limits (its own row, else the queue's
-- default: burst and w with a 0 resolved, burst_set, weight_set and
-- budget_window_ms as written, for the report) and whether it is paused;
-- tid is its turn row's version in the statement's snapshot, tat_s its
-- rate bucket there. Read lazily
-- by gate: a tenant the walk does not reach costs nothing.
rotation AS (
    SELECT t.tenant, t.turn_batch * 1024 + t.turn_pos AS pos, t.ctid AS tid, t.rate_tat AS tat_s, e.max_leased IS NOT NULL AS gated,
           coalesce(e.max_leased, 0) AS max_leased, coalesce(e.rate, 0) AS rate,
           CASE WHEN e.burst > 0 THEN e.burst ELSE greatest(1, ceil(coalesce(e.rate, 0)))::int END AS burst,
           greatest(coalesce(e.weight, 0), 1) AS w,
           coalesce(e.budget_cost, 0) AS budget_cost, coalesce(e.budget_tokens, 0) AS budget_tokens,
           coalesce(e.budget_window_ms, 0) / 10 AS slot_ms,
           e.burst AS burst_set, e.weight AS weight_set, e.budget_window_ms,
           (SELECT p FROM tpaused) AND EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = t.tenant) AS paused
    FROM {turns} t
    LEFT JOIN LATERAL (
        SELECT o.max_leased, o.rate, o.burst, o.weight, o.budget_cost, o.budget_tokens, o.budget_window_ms
        FROM {work}_limits o WHERE o.queue = $1 AND o.tenant = t.tenant
        UNION ALL
        SELECT d.max_leased, d.rate, d.burst, d.weight, d.budget_cost, d.budget_tokens, d.budget_window_ms FROM dflt d
        LIMIT 1
    ) e ON true
    WHERE t.queue = $1 AND t.wake_at <= $2
      AND NOT EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = '')
      {lean_guard}
    ORDER BY t.turn_batch, t.turn_pos, t.tenant
),
-- The tenants of the rotation as the walk meets them, numbered (ord), each
-- with its room and the chunk its first round offers it (chunk1), and the
-- reason a gated tenant with no room is held. A gated tenant that is not
-- paused, and not already held in the statement's snapshot (h), has its
-- turn row locked here first (g); one another claim holds is skipped
-- (credit NULL: another claim is serving it). gate is read lazily, by pick's first
-- round and then by the report (reached), which reads no further than the
-- first round did, so every tenant locked here is one the walk reached.
gate AS (
    SELECT row_number() OVER () AS ord, r.tenant, r.pos, r.gated, r.paused, r.w, r.rate, r.max_leased,
           r.burst_set, r.weight_set, r.budget_cost, r.budget_tokens, r.budget_window_ms,
           g.credit, coalesce(g.rate_tat, r.tat_s) AS rate_tat, c.cap_room, least(c.cap_room, c.rate_room) AS room0,
           CASE WHEN r.paused THEN 0 -- passed over, keeping its place
                WHEN NOT r.gated THEN 1
                WHEN h.why IS NOT NULL THEN 0 -- held in the snapshot, not locked
                WHEN g.credit IS NULL THEN 0 -- another claim is serving it
                WHEN c.cap_room <= 0 OR c.rate_room <= 0 THEN 0
                ELSE least(greatest(r.w - g.credit, 1), c.cap_room, c.rate_room)
           END AS chunk1,
           CASE WHEN NOT r.gated OR r.paused THEN NULL
                WHEN h.why IS NOT NULL THEN h.why
                WHEN g.credit IS NULL THEN NULL
                WHEN c.cap_room <= 0 THEN 'cap'
                WHEN c.rate_room <= 0 THEN 'rate'
           END AS reason
    FROM rotation r
    -- A capped tenant's live leases in the statement's snapshot.
    LEFT JOIN LATERAL (
        SELECT n, n >= r.max_leased AS full
        FROM (SELECT count(*)::integer AS n FROM {work} w
              WHERE w.queue = $1 AND w.tenant = r.tenant AND w.state = 'leased' AND w.lease_expires_at > $2) q
        WHERE r.gated AND NOT r.paused AND r.max_leased > 0
    ) s ON true
    -- Why the snapshot holds a gated tenant, if it does: at its cap, its
    -- bucket empty (the next token is due later than now: rate_room below
    -- would be 0), or at a budget ceiling in the window. Held there, it is
    -- passed over without its turn row being locked. The snapshot can
    -- only err towards holding: a lease that ended since makes the count
    -- too high, a claim since only moved the bucket's time later, and
    -- charges are only ever added; holding a tenant breaks no limit, and
    -- its claimers are woken when a lease ends, at the token's time, or
    -- when the window slides. So a claim behind many held tenants locks
    -- none of their rows.
    LEFT JOIN LATERAL (
        SELECT CASE WHEN s.full THEN 'cap'
                    WHEN r.rate > 0 AND r.tat_s - $6 > (r.burst - 1) * (1e6 / r.rate) + 1e-6 THEN 'rate'
                    WHEN r.slot_ms > 0 AND (
                        SELECT (r.budget_cost > 0 AND coalesce(sum(u.cost_micros), 0) >= r.budget_cost)
                            OR (r.budget_tokens > 0 AND coalesce(sum(u.tokens), 0) >= r.budget_tokens)
                        FROM {work}_usage u
                        WHERE u.queue = $1 AND u.tenant = r.tenant AND u.slot_ms = r.slot_ms
                          AND u.at_ms >= $7 - (($7 % r.slot_ms) + r.slot_ms) % r.slot_ms - 10 * r.slot_ms
                          AND u.at_ms <  $7 - (($7 % r.slot_ms) + r.slot_ms) % r.slot_ms + r.slot_ms) THEN 'budget'
               END AS why
        WHERE r.gated AND NOT r.paused
    ) h ON true
    LEFT JOIN LATERAL (
        SELECT x.rate_tat, x.credit,
               CASE WHEN r.max_leased <= 0 THEN 0
                    WHEN x.tid <> r.tid THEN {work}_live_leases($1, r.tenant, $2)
                    WHEN r.max_leased - s.n >= $3 THEN s.n
                    ELSE {work}_live_leases($1, r.tenant, $2)
               END AS live
        FROM (
            SELECT t.rate_tat, t.credit, t.ctid AS tid
            FROM {turns} t
            WHERE t.queue = $1 AND t.tenant = r.tenant AND r.gated AND NOT r.paused AND h.why IS NULL
            FOR UPDATE SKIP LOCKED
        ) x
    ) g ON true
    CROSS JOIN LATERAL (
        SELECT CASE WHEN r.max_leased > 0 THEN r.max_leased - g.live ELSE $3 END AS cap_room,
               CASE WHEN r.rate > 0
                    THEN greatest(floor(((r.burst - 1) * (1e6 / r.rate) + 1e-6 - (greatest(g.rate_tat, $6) - $6)) / (1e6 / r.rate)), -1)::int + 1
                    ELSE $3 END AS rate_room
    ) c
),
pick (round, ord, pos, sub, last, k, tenant, id, due_at, seq, rank, row_id, n, gated, w, credit0, tat0, rate, room0, cap_room) AS (
    SELECT 1, f.ord, f.pos, f.sub, f.sub = f.cnt,
           CASE WHEN min(f.tenant) OVER () = max(f.tenant) OVER () THEN greatest($3 - count(*) OVER (), 1) ELSE 0 END,
           f.tenant, f.id, f.due_at, f.seq, f.rank, f.ctid, f.sub, f.gated, f.w, f.credit, f.rate_tat, f.rate, f.room0, f.cap_room
    FROM (
        SELECT r.ord, r.pos, r.tenant, r.gated, r.w, r.credit, r.rate_tat, r.rate, r.room0, r.cap_room,
               w.id, w.due_at, w.seq, w.rank, w.ctid, w.sub, w.cnt
        FROM gate r
        CROSS JOIN LATERAL (SELECT r.tenant, -101 AS rank, '-infinity'::timestamptz AS due_at, 0::bigint AS seq, r.chunk1::bigint AS lim) a
        CROSS JOIN LATERAL (
            SELECT w.*, row_number() OVER (ORDER BY w.rank, w.due_at, w.seq) AS sub, count(*) OVER () AS cnt
            FROM ({claim_pick}) w
        ) w
        LIMIT $3
    ) f
    UNION ALL
    SELECT p.round + 1, p.ord, p.pos, c.sub, c.sub = c.cnt, p.k, p.tenant, c.id, c.due_at, c.seq, c.rank, c.ctid, p.n + c.sub,
           p.gated, p.w, p.credit0, p.tat0, p.rate, p.room0, p.cap_room
    FROM pick p
    CROSS JOIN LATERAL (
        SELECT p.tenant, p.rank, p.due_at, p.seq,
               (CASE WHEN NOT p.gated THEN greatest(p.k, 1)
                     ELSE greatest(0, least(CASE WHEN p.k > 0 THEN p.k ELSE p.w END, p.room0 - p.n))
                END)::bigint AS lim
    ) a
    CROSS JOIN LATERAL (
        SELECT w.*, row_number() OVER (ORDER BY w.rank, w.due_at, w.seq) AS sub, count(*) OVER () AS cnt
        FROM ({claim_pick}) w
    ) c
    WHERE p.last
),
picked AS (
    SELECT round, ord, pos, sub, tenant, id, row_id, n, gated, w, credit0, tat0, rate, room0, cap_room FROM pick LIMIT $3
),
-- As in claim.sql: the rows are reached only through the TIDs their locks
-- returned. ARRAY(...) reads the whole of picked before the first row is
-- written, so every count above was taken before this claim leased
-- anything.
leased AS (
    UPDATE {work} w
    SET state = 'leased', worker = $4, lease_expires_at = $5, token = nextval('{work}_token_seq'),
        claimed_at = $2, events = w.events + (SELECT count(*)::integer FROM ret)
    FROM picked p
    WHERE w.ctid = ANY (ARRAY(SELECT row_id FROM picked)) AND w.ctid = p.row_id
      AND w.tenant = p.tenant AND w.id = p.id
    RETURNING w.queue, w.tenant, w.id, w.state, w.payload, w.metadata, w.not_before, w.attempts, w.last_error, w.enqueued_at, w.dead_at, w.worker, w.lease_expires_at, w.token,
              w.priority, w.snoozes, w.wait_signal, w.wait_since, w.wait_until, w.resumed_signal, w.resumed_payload, w.resumed_timed_out, w.resumed_at, w.cancelled_at, w.cancel_reason, w.unique_for_us, w.finished_at, w.events,
              p.round, p.pos, p.sub, p.n, p.gated, p.w, p.credit0, p.tat0, p.rate, p.room0, p.cap_room
),
-- The claimed events, when the queue records them (the full rendering
-- only: fragments/claim_events.sql).
{events}
ordered AS (
    SELECT tenant, id, round, pos, n, gated, w, credit0, tat0, rate, room0, cap_room,
           row_number() OVER (ORDER BY round, pos, tenant, sub) AS ord
    FROM leased
),
-- A served tenant goes to the back, in the order of its last turn in this
-- batch, unless it is gated and its items this batch left it part way
-- through a turn (then it keeps its place and the credit). The walk's
-- figures for a tenant (gated ... cap_room) are the same on each of its
-- rows.
served0 AS (
    SELECT tenant, count(*) AS n, max(round) AS last_round, min(pos) AS first_pos,
           array_agg(id ORDER BY ord) AS ids,
           array_agg(ord ORDER BY ord) AS ords,
           bool_or(gated) AS gated, max(w) AS w, max(credit0) AS credit0, max(tat0) AS tat0, max(rate) AS rate,
           max(room0) AS room0, max(cap_room) AS cap_room
    FROM ordered
    GROUP BY tenant
),
served AS (
    SELECT s.*, row_number() OVER (PARTITION BY s.to_back ORDER BY s.last_round, s.first_pos, s.tenant) AS turn_pos
    FROM (SELECT s.*, NOT s.gated OR (s.credit0 + s.n) % s.w = 0 AS to_back FROM served0 s) s
),
-- As in claim.sql, turn rows are locked in one order and one another
-- claimer is bumping is skipped; a gated tenant's row is this claim's
-- already, so it is never skipped.
{bump_lock},
bump AS (
    UPDATE {turns} t
    SET turn_batch = CASE WHEN s.to_back THEN b.n ELSE t.turn_batch END,
        turn_pos   = CASE WHEN s.to_back THEN s.turn_pos ELSE t.turn_pos END,
        served = t.served + s.n,
        credit   = CASE WHEN s.gated THEN ((t.credit + s.n) % s.w)::int ELSE t.credit END,
        rate_tat = CASE WHEN s.gated AND s.rate > 0 THEN greatest(t.rate_tat, $6) + s.n * (1e6 / s.rate) ELSE t.rate_tat END,
        {bump_recent}
    FROM served s, bump_lock l, batch b
    WHERE t.queue = $1 AND t.tenant = s.tenant AND l.tenant = s.tenant
),
-- The report ($8): the tenants the walk passed over because a limit held
-- them, each once. fin says how far the walk went: its items, its last
-- round, the place of the last tenant served in that round, and the last
-- tenant of gate that round 1 served.
fin AS (
    SELECT count(*) AS n, max(round) AS round, (max(ARRAY[round, pos]))[2] AS last_pos,
           max(ord) FILTER (WHERE round = 1) AS r1_ord
    FROM picked
    HAVING $8
),
-- The tenants round 1 reached, as gate holds them: all of them when round
-- 1 was not cut short (it then read gate to the end), else those up to
-- the one of its last item. The LIMIT keeps this from reading gate any
-- further than round 1 did (which would lock turn rows the walk never
-- reached); without a report it reads nothing.
reached AS (
    SELECT g.*
    FROM gate g
    WHERE $8
    LIMIT (SELECT CASE WHEN fin.n >= $3 AND fin.round = 1 THEN fin.r1_ord END FROM fin)
),
-- Held when they first came up: the reached tenants the walk found paused
-- with a due item, or gated without room (none of their items is in the
-- batch). A pause is checked before any limit.
held_first AS (
    SELECT r.tenant, CASE WHEN r.paused THEN 'paused' ELSE r.reason END AS reason, r.rate_tat
    FROM reached r
    WHERE CASE WHEN r.paused THEN
              -- Its earliest item (fragments/first_due.sql) is due.
              (SELECT {first_due} FROM (SELECT r.tenant) ft) <= $2
          ELSE r.reason IS NOT NULL END
),
-- Held later: gated tenants the batch brought to their cap or out of
-- tokens, when the walk came round to them again (it reached every tenant
-- it would have served next: all of them when the batch did not fill,
-- else those before the last item it took).
held_later AS (
    SELECT s.tenant, CASE WHEN s.cap_room - s.n <= 0 THEN 'cap' ELSE 'rate' END AS reason,
           greatest(s.tat0, $6) + s.n * (1e6 / nullif(s.rate, 0)) AS rate_tat
    FROM fin, served0 s
    WHERE s.gated AND s.room0 - s.n <= 0
      AND (fin.n < $3 OR fin.round > s.last_round + 1 OR (fin.round = s.last_round + 1 AND s.first_pos < fin.last_pos))
),
-- The held tenants with the limits the walk read, and the budget usage of
-- one held for its budget.
held AS (
    SELECT h.tenant, h.reason, h.rate_tat,
           r.max_leased, r.rate, r.burst_set AS burst, r.weight_set AS weight, r.budget_cost, r.budget_tokens, r.budget_window_ms,
           u.at_ms, u.costs, u.tokens
    FROM (
        SELECT tenant, reason, rate_tat FROM held_first
        UNION ALL
        SELECT tenant, reason, rate_tat FROM held_later
    ) h
    JOIN reached r ON r.tenant = h.tenant
    LEFT JOIN LATERAL (
        SELECT array_agg(x.at_ms ORDER BY x.at_ms) AS at_ms, array_agg(x.cost_micros ORDER BY x.at_ms) AS costs,
               array_agg(x.tokens ORDER BY x.at_ms) AS tokens
        FROM {work}_usage x
        WHERE x.queue = $1 AND x.tenant = h.tenant AND h.reason = 'budget' AND x.slot_ms = r.budget_window_ms / 10
    ) u ON true
)
SELECT 'lease' AS kind, {item_columns}, NULL::text AS reason, NULL::float8[] AS floats, NULL::bigint[] AS ints,
       NULL::bigint[] AS at_ms, NULL::bigint[] AS costs, NULL::bigint[] AS tokens, round, pos, sub
FROM leased
UNION ALL
-- Everything else, one row each, in the columns of an item that is not
-- one: the held tenants (reason, then its bucket and the limits the walk
-- read: floats rate_tat and rate; ints max_leased, burst, weight,
-- budget_cost, budget_tokens, budget_window_ms; and the budget usage of
-- one held for its budget), and the words about the queue.
SELECT i.kind, $1, i.tenant, '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL,
       i.reason, i.floats, i.ints, i.at_ms, i.costs, i.tokens, NULL, NULL, NULL
FROM (
    SELECT 'held' AS kind, h.tenant, h.reason, ARRAY[coalesce(h.rate_tat, 0), h.rate] AS floats,
           ARRAY[h.max_leased, coalesce(h.burst, 0), coalesce(h.weight, 0), h.budget_cost, h.budget_tokens, coalesce(h.budget_window_ms, 0)]::bigint[] AS ints,
           h.at_ms, h.costs, h.tokens
    FROM held h
    UNION ALL
    -- No limits or pauses left on the queue: the next claim may go back
    -- to claim.sql.
    SELECT 'free', '', NULL, NULL, NULL, NULL, NULL, NULL
    WHERE NOT EXISTS (SELECT 1 FROM {work}_limits l WHERE l.queue = $1) AND NOT EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1)
    UNION ALL
    -- The whole queue is paused: it claimed nothing.
    SELECT 'paused', '', NULL, NULL, NULL, NULL, NULL, NULL
    WHERE EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = '')
    UNION ALL
    -- Waits of the queue have timed out (see claim.sql).
    SELECT 'timeouts', '', NULL, NULL, NULL, NULL, NULL, NULL
    WHERE EXISTS (SELECT 1 FROM {work} w WHERE w.queue = $1 AND w.state = 'waiting' AND w.due_at <= $2)
    {lean_row}
) i
ORDER BY round, pos, tenant, sub
