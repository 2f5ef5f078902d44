-- The claim's events (claim.sql and claim_flow.sql in full, claim.sql's
-- events rendering): the claimed event of each leased item when the
-- queue records events (fragments/record_events.sql), which the lean and
-- priorities renderings leave out. Queries name it {claim_events}; it ends
-- with a comma.
ev AS (
    SELECT l.queue, l.tenant, l.id, l.events AS n, r.keep, true AS item, 'claimed' AS kind, $2::timestamptz AS at, $4::text AS worker,
           l.attempts + 1 AS attempt, l.token, NULL AS error, NULL AS next_due, NULL AS signal, NULL AS reason, NULL AS run_time_us
    FROM leased l, ret r
),
{record_events},
