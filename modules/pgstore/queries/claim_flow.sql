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
-- claim.sql walks it, for one more index probe (its limits) and one of
-- the pauses.
--
-- A gated tenant's turn row is locked, FOR UPDATE SKIP LOCKED, when the
-- tenant first comes up, and stays locked to commit, so two claims never
-- serve one gated tenant at once: the second skips it, as it skips an
-- item another claim holds. Under the lock the claim reads the row's rate
-- bucket and weight credit (a locking read returns the row's latest
-- version) and counts the tenant's live leases with {work}_live_leases, a
-- VOLATILE function whose query takes a snapshot of its own, after the
-- lock was granted: it sees every lease that an earlier holder of the lock
-- committed (the README says why the cap holds). The function is called
-- on the locked row's columns, so it cannot run before the lock.
--
-- From those the claim works out the tenant's room in items: its cap less
-- its live leases, the tokens in its bucket, none when it is over budget.
-- The first of them that leaves no room (cap, rate, budget, in that order)
-- holds the tenant: it is passed over, none of its items is locked, its
-- turn row is not changed, and the walk goes on with the others. Each
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
-- The rotation with each tenant's limits, read lazily by pick: a tenant
-- the walk does not reach costs nothing.
rotation AS (
    SELECT t.tenant, t.turn_batch * 1024 + t.turn_pos AS pos, e.max_leased IS NOT NULL AS gated,
           coalesce(e.max_leased, 0) AS max_leased, coalesce(e.rate, 0) AS rate,
           CASE WHEN e.burst > 0 THEN e.burst ELSE greatest(1, ceil(coalesce(e.rate, 0)))::int END AS burst,
           greatest(coalesce(e.weight, 0), 1) AS w,
           coalesce(e.budget_cost, 0) AS budget_cost, coalesce(e.budget_tokens, 0) AS budget_tokens,
           coalesce(e.budget_window_ms, 0) / 10 AS slot_ms,
           EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = t.tenant) AS paused
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
    ORDER BY t.turn_batch, t.turn_pos, t.tenant
),
pick (round, pos, sub, last, k, tenant, id, due_at, seq, rank, row_id, n, gated, w, credit0, tat0, rate, room0, cap_room) AS (
    SELECT 1, f.pos, f.sub, f.sub = f.cnt,
           CASE WHEN min(f.tenant) OVER () = max(f.tenant) OVER () THEN greatest($3 - count(*) OVER (), 1) ELSE 0 END,
           f.tenant, f.id, f.due_at, f.seq, f.rank, f.ctid, f.sub, f.gated, f.w, f.credit0, f.tat0, f.rate, f.room0, f.cap_room
    FROM (
        SELECT r.pos, r.tenant, r.gated, r.w, g.credit AS credit0, g.rate_tat AS tat0, r.rate, m.room0, m.cap_room,
               w.id, w.due_at, w.seq, w.rank, w.ctid, w.sub, w.cnt
        FROM rotation r
        LEFT JOIN LATERAL (
            SELECT x.rate_tat, x.credit,
                   CASE WHEN r.max_leased > 0 THEN {work}_live_leases($1, x.tenant, $2) ELSE 0 END AS live
            FROM (
                SELECT t.tenant, t.rate_tat, t.credit
                FROM {turns} t
                WHERE t.queue = $1 AND t.tenant = r.tenant AND r.gated AND NOT r.paused
                FOR UPDATE SKIP LOCKED
            ) x
        ) g ON true
        LEFT JOIN LATERAL (
            SELECT coalesce(sum(u.cost_micros), 0) AS cost, coalesce(sum(u.tokens), 0) AS tokens
            FROM {work}_usage u
            WHERE u.queue = $1 AND u.tenant = r.tenant AND r.slot_ms > 0 AND u.slot_ms = r.slot_ms AND g.credit IS NOT NULL
              AND u.at_ms >= $7 - (($7 % r.slot_ms) + r.slot_ms) % r.slot_ms - 10 * r.slot_ms
              AND u.at_ms <  $7 - (($7 % r.slot_ms) + r.slot_ms) % r.slot_ms + r.slot_ms
        ) b ON true
        CROSS JOIN LATERAL (
            SELECT c.cap_room, least(c.cap_room, c.rate_room) AS room0,
                   CASE WHEN r.paused THEN 0 -- passed over, keeping its place
                        WHEN NOT r.gated THEN 1
                        WHEN g.credit IS NULL THEN 0 -- another claim is serving it
                        WHEN c.cap_room <= 0 OR c.rate_room <= 0 OR c.over THEN 0
                        ELSE least(greatest(r.w - g.credit, 1), c.cap_room, c.rate_room)
                   END AS chunk1
            FROM (
                SELECT CASE WHEN r.max_leased > 0 THEN r.max_leased - g.live ELSE $3 END AS cap_room,
                       CASE WHEN r.rate > 0
                            THEN greatest(floor(((r.burst - 1) * (1e6 / r.rate) + 1e-6 - (greatest(g.rate_tat, $6) - $6)) / (1e6 / r.rate)), -1)::int + 1
                            ELSE $3 END AS rate_room,
                       (r.budget_cost > 0 AND b.cost >= r.budget_cost) OR (r.budget_tokens > 0 AND b.tokens >= r.budget_tokens) AS over
            ) c
        ) m
        CROSS JOIN LATERAL (SELECT r.tenant, -101 AS rank, '-infinity'::timestamptz AS due_at, 0::bigint AS seq, m.chunk1::bigint AS lim) a
        CROSS JOIN LATERAL (
            SELECT w.*, row_number() OVER (ORDER BY w.rank, w.due_at, w.seq) AS sub, count(*) OVER () AS cnt
            FROM ({pick_items}) w
        ) w
        LIMIT $3
    ) f
    UNION ALL
    SELECT p.round + 1, p.pos, c.sub, c.sub = c.cnt, p.k, p.tenant, c.id, c.due_at, c.seq, c.rank, c.ctid, p.n + c.sub,
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
        FROM ({pick_items}) w
    ) c
    WHERE p.last
),
picked AS (
    SELECT round, pos, sub, tenant, id, row_id, n, gated, w, credit0, tat0, rate, room0, cap_room FROM pick LIMIT $3
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
              p.round, p.pos, p.sub, p.gated, p.w, p.credit0, p.rate
),
-- The claimed events, when the queue records them (fragments/record_events.sql).
ev AS (
    SELECT l.queue, l.tenant, l.id, l.events AS n, r.keep, true AS item, 'claimed' AS kind, $2::timestamptz AS at, $4::text AS worker,
           l.attempts + 1 AS attempt, l.token, NULL AS error, NULL AS next_due, NULL AS signal, NULL AS reason, NULL AS run_time_us
    FROM leased l, ret r
),
{record_events},
ordered AS (
    SELECT tenant, id, round, pos, gated, w, credit0, rate, row_number() OVER (ORDER BY round, pos, tenant, sub) AS ord
    FROM leased
),
-- A served tenant goes to the back, in the order of its last turn in this
-- batch, unless it is gated and its items this batch left it part way
-- through a turn (then it keeps its place and the credit).
served0 AS (
    SELECT tenant, count(*) AS n, max(round) AS last_round, min(pos) AS first_pos,
           array_agg(id ORDER BY ord) AS ids,
           array_agg(ord ORDER BY ord) AS ords,
           bool_or(gated) AS gated, max(w) AS w, max(credit0) AS credit0, max(rate) AS rate
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
-- them, each once. The walk reached every tenant it would have served
-- next: all of them when the batch did not fill, else those before the
-- last item it took.
fin AS (
    SELECT count(*) AS n, max(round) AS round,
           (SELECT p.pos FROM picked p WHERE p.round = 1 ORDER BY p.pos DESC, p.tenant DESC LIMIT 1) AS r1_pos,
           (SELECT p.tenant FROM picked p WHERE p.round = 1 ORDER BY p.pos DESC, p.tenant DESC LIMIT 1) AS r1_tenant
    FROM picked
    HAVING $8
),
-- Where round 1 stopped, as a place in the turns index: the walk reached
-- the turn rows before it (all of them when round 1 was not cut short).
reach AS (
    SELECT CASE WHEN cut THEN r1_pos / 1024 ELSE 9223372036854775807 END AS turn_batch,
           CASE WHEN cut THEN (r1_pos % 1024)::int ELSE 0 END AS turn_pos,
           CASE WHEN cut THEN r1_tenant ELSE '' END AS tenant
    FROM (SELECT fin.n >= $3 AND fin.round = 1 AS cut, fin.r1_pos, fin.r1_tenant FROM fin) f
),
-- Held when they first came up: gated tenants that round 1 reached and
-- that have no item in the batch, with their limits evaluated as the walk
-- does (their turn rows are this claim's already, or locked now). The
-- turns index is read only up to where round 1 stopped.
held_first AS (
    SELECT r.tenant, g.rate_tat,
           CASE WHEN r.max_leased > 0 AND r.max_leased - g.live <= 0 THEN 'cap'
                WHEN r.rate > 0 AND g.rate_tat - $6 > (r.burst - 1) * (1e6 / r.rate) + 1e-6 THEN 'rate'
                WHEN (r.budget_cost > 0 AND b.cost >= r.budget_cost) OR (r.budget_tokens > 0 AND b.tokens >= r.budget_tokens) THEN 'budget'
           END AS reason
    FROM reach
    CROSS JOIN LATERAL (
        SELECT t.tenant, e.max_leased, coalesce(e.rate, 0) AS rate,
               CASE WHEN e.burst > 0 THEN e.burst ELSE greatest(1, ceil(coalesce(e.rate, 0)))::int END AS burst,
               e.budget_cost, e.budget_tokens, e.budget_window_ms / 10 AS slot_ms
        FROM {turns} t
        CROSS JOIN LATERAL (
            SELECT o.max_leased, o.rate, o.burst, o.budget_cost, o.budget_tokens, o.budget_window_ms
            FROM {work}_limits o WHERE o.queue = $1 AND o.tenant = t.tenant
            UNION ALL
            SELECT d.max_leased, d.rate, d.burst, d.budget_cost, d.budget_tokens, d.budget_window_ms FROM dflt d
            LIMIT 1
        ) e
        WHERE t.queue = $1 AND t.wake_at <= $2
          AND (t.turn_batch, t.turn_pos, t.tenant) < (reach.turn_batch, reach.turn_pos, reach.tenant)
          AND NOT EXISTS (SELECT 1 FROM picked p WHERE p.tenant = t.tenant)
          AND NOT EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = t.tenant)
    ) r
    CROSS JOIN LATERAL (
        SELECT x.rate_tat,
               CASE WHEN r.max_leased > 0 THEN {work}_live_leases($1, x.tenant, $2) ELSE 0 END AS live
        FROM (
            SELECT t.tenant, t.rate_tat
            FROM {turns} t
            WHERE t.queue = $1 AND t.tenant = r.tenant
            FOR UPDATE SKIP LOCKED
        ) x
    ) g
    LEFT JOIN LATERAL (
        SELECT coalesce(sum(u.cost_micros), 0) AS cost, coalesce(sum(u.tokens), 0) AS tokens
        FROM {work}_usage u
        WHERE u.queue = $1 AND u.tenant = r.tenant AND r.slot_ms > 0 AND u.slot_ms = r.slot_ms
          AND u.at_ms >= $7 - (($7 % r.slot_ms) + r.slot_ms) % r.slot_ms - 10 * r.slot_ms
          AND u.at_ms <  $7 - (($7 % r.slot_ms) + r.slot_ms) % r.slot_ms + r.slot_ms
    ) b ON true
),
-- Held later: gated tenants the batch brought to their cap or out of
-- tokens, when the walk came round to them again.
held_later AS (
    SELECT p.tenant, CASE WHEN p.cap_room - p.n <= 0 THEN 'cap' ELSE 'rate' END AS reason,
           greatest(p.tat0, $6) + p.n * (1e6 / nullif(p.rate, 0)) AS rate_tat
    FROM fin, (
        SELECT DISTINCT ON (tenant) * FROM picked ORDER BY tenant, n DESC
    ) p
    WHERE p.gated AND p.room0 - p.n <= 0
      AND (fin.n < $3 OR fin.round > p.round + 1
           OR (fin.round = p.round + 1 AND p.pos < (SELECT max(q.pos) FROM picked q WHERE q.round = fin.round)))
),
-- Held for a pause: paused tenants with a due item that round 1 reached
-- (a pause is checked before any limit).
held_paused AS (
    SELECT t.tenant
    FROM reach
    CROSS JOIN {turns} t
    WHERE t.queue = $1 AND t.wake_at <= $2
      AND (t.turn_batch, t.turn_pos, t.tenant) < (reach.turn_batch, reach.turn_pos, reach.tenant)
      AND EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = t.tenant)
      -- Its earliest item, walking {work}_ready in order (see
      -- park_candidates.sql), is due.
      AND (SELECT w.due_at FROM {work} w
           WHERE w.queue = $1 AND w.tenant = t.tenant AND w.state = 'queued'
           ORDER BY w.due_at, w.seq LIMIT 1) <= $2
),
held AS (
    SELECT h.tenant, h.reason, h.rate_tat,
           e.max_leased, e.rate, e.burst, e.weight, e.budget_cost, e.budget_tokens, e.budget_window_ms,
           array(SELECT u.at_ms FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = h.tenant AND h.reason = 'budget' AND u.slot_ms = e.budget_window_ms / 10 ORDER BY u.at_ms) AS at_ms,
           array(SELECT u.cost_micros FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = h.tenant AND h.reason = 'budget' AND u.slot_ms = e.budget_window_ms / 10 ORDER BY u.at_ms) AS costs,
           array(SELECT u.tokens FROM {work}_usage u WHERE u.queue = $1 AND u.tenant = h.tenant AND h.reason = 'budget' AND u.slot_ms = e.budget_window_ms / 10 ORDER BY u.at_ms) AS tokens
    FROM (
        SELECT tenant, reason, rate_tat FROM held_first WHERE reason IS NOT NULL
        UNION ALL
        SELECT tenant, reason, rate_tat FROM held_later
    ) h
    CROSS JOIN LATERAL (
        SELECT o.max_leased, o.rate, o.burst, o.weight, o.budget_cost, o.budget_tokens, o.budget_window_ms
        FROM {work}_limits o WHERE o.queue = $1 AND o.tenant = h.tenant
        UNION ALL
        SELECT d.max_leased, d.rate, d.burst, d.weight, d.budget_cost, d.budget_tokens, d.budget_window_ms FROM dflt d
        LIMIT 1
    ) e
)
SELECT 'lease' AS kind, {item_columns}, NULL::text AS reason, NULL::float8 AS rate_tat,
       NULL::integer AS max_leased, NULL::float8 AS rate, NULL::integer AS burst, NULL::integer AS weight,
       NULL::bigint AS budget_cost, NULL::bigint AS budget_tokens, NULL::bigint AS budget_window_ms,
       NULL::bigint[] AS at_ms, NULL::bigint[] AS costs, NULL::bigint[] AS tokens, round, pos, sub
FROM leased
UNION ALL
SELECT 'held', $1, h.tenant, '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL,
       h.reason, h.rate_tat, h.max_leased, h.rate, h.burst, h.weight, h.budget_cost, h.budget_tokens, h.budget_window_ms,
       h.at_ms, h.costs, h.tokens, NULL, NULL, NULL
FROM held h
UNION ALL
SELECT 'held', $1, h.tenant, '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL,
       'paused', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM held_paused h, fin
UNION ALL
-- No limits or pauses left on the queue: the next claim may go back to
-- claim.sql.
SELECT 'free', $1, '', '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM {work}_limits l WHERE l.queue = $1) AND NOT EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1)
UNION ALL
-- The whole queue is paused: it claimed nothing.
SELECT 'paused', $1, '', '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM {work}_pauses z WHERE z.queue = $1 AND z.tenant = '')
UNION ALL
-- Waits of the queue have timed out (see claim.sql).
SELECT 'timeouts', $1, '', '', 'queued', NULL, NULL, NULL, 0, '', $2, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM {work} w WHERE w.queue = $1 AND w.state = 'waiting' AND w.due_at <= $2)
ORDER BY round, pos, tenant, sub
