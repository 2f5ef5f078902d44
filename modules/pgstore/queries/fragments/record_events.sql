-- Records the events of a transition in the statement that makes it.
-- It reads a CTE ev(queue, tenant, id, n, keep, item, kind, at, worker,
-- attempt, token, error, next_due, signal, reason, run_time_us) of the
-- statement around it, one row per event, which holds rows only for
-- queues whose retention records events (a join to {work}_retention on
-- events > 0): a queue without one writes nothing here. n is the event's
-- number in the item's life (the item's new events column), keep the
-- queue's Retention.Events; item says whether the item stays to own it
-- (a completed item that is not kept leaves its event in the queue's log
-- only). The item keeps its latest keep events. Queries name it
-- {record_events}; it ends without a comma.
ev_seq AS (
    SELECT e.queue::text AS queue, e.tenant::text AS tenant, e.id::text AS id, e.n::integer AS n, e.keep::integer AS keep,
           e.item::boolean AS item, e.kind::text AS kind, e.at::timestamptz AS at, coalesce(e.worker::text, '') AS worker,
           coalesce(e.attempt::integer, 0) AS attempt, coalesce(e.token::bigint, 0) AS token, coalesce(e.error::text, '') AS error,
           e.next_due::timestamptz AS next_due, coalesce(e.signal::text, '') AS signal, coalesce(e.reason::text, '') AS reason,
           coalesce(e.run_time_us::bigint, 0) AS run_time_us, nextval('{work}_event_seq') AS seq
    FROM ev e
),
ev_item AS (
    INSERT INTO {work}_events (queue, tenant, id, seq, n, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time_us)
    SELECT queue, tenant, id, seq, n, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time_us
    FROM ev_seq WHERE item
),
ev_log AS (
    INSERT INTO {work}_log (queue, seq, tenant, id, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time_us)
    SELECT queue, seq, tenant, id, kind, at, worker, attempt, token, error, next_due, signal, reason, run_time_us
    FROM ev_seq
),
ev_trim AS (
    DELETE FROM {work}_events x
    USING ev_seq e
    WHERE e.item AND e.n > e.keep AND x.queue = e.queue AND x.tenant = e.tenant AND x.id = e.id AND x.n <= e.n - e.keep
)
