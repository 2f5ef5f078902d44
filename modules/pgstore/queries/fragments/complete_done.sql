-- The Complete of a batch, for complete.sql and complete_flow.sql: $1..$4
-- are parallel arrays (queue, tenant, id, token), $5 now. Each row is
-- deleted only while it is still leased under the token presented
-- (done). A completed item its queue's retention keeps, or that asked
-- for a uniqueness window, is written back in the same statement as
-- completed (kept): the DELETE hands it to the INSERT, so a queue
-- without retention pays one probe of {work}_retention per queue of the
-- batch and nothing per item: ret is MATERIALIZED, since a CTE read once
-- is otherwise folded into its reader, and the join in fate then probed
-- the index once per completed item. Its completed event is recorded when the
-- queue records events; the events of an item that is not kept go with
-- it. Queries name it {complete_done}; it ends without a comma.
--
-- The state is compared through coalesce (state is NOT NULL, so it means
-- the same) so that the planner cannot prove the predicate of the
-- adk_work_leased partial index and reach the rows through it: that
-- index holds only the queue and tenant, and a plan made on stale
-- statistics that uses it filters every leased row of the tenant for each
-- item (measured, when it held only the queue: 700 ms for a batch of 600
-- with ~800 leased).
ret AS MATERIALIZED (
    SELECT r.queue, r.events AS keep, (r.age_us > 0 OR r.keep_count > 0) AS keeps
    FROM {work}_retention r
    WHERE r.queue = ANY ($1::text[])
),
done AS (
    DELETE FROM {work} w
    USING unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
    WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
      AND coalesce(w.state, '') = 'leased' AND w.token = l.token AND w.cancelled_at IS NULL
    RETURNING w.*
),
fate AS (
    SELECT d.*, coalesce(r.keeps, false) OR d.unique_for_us > 0 AS kept, coalesce(r.keep, 0) AS keep
    FROM done d LEFT JOIN ret r ON r.queue = d.queue
),
kept AS (
    INSERT INTO {work} (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, attempts, last_error, enqueued_at,
                        priority, snoozes, resumed_signal, resumed_payload, resumed_timed_out, resumed_at,
                        finished_at, unique_for_us, unique_until, events, heartbeats)
    SELECT queue, tenant, id, 'completed', seq, due_at, not_before, payload, metadata, attempts, last_error, enqueued_at,
           priority, snoozes, resumed_signal, resumed_payload, resumed_timed_out, resumed_at,
           $5::timestamptz, unique_for_us, CASE WHEN unique_for_us > 0 THEN $5::timestamptz + unique_for_us * interval '1 microsecond' END,
           events + CASE WHEN keep > 0 THEN 1 ELSE 0 END, heartbeats
    FROM fate WHERE kept
),
gone_events AS (
    DELETE FROM {work}_events x
    USING fate f
    WHERE NOT f.kept AND f.events > 0 AND x.queue = f.queue AND x.tenant = f.tenant AND x.id = f.id
),
ev AS (
    SELECT queue, tenant, id, events + 1 AS n, keep, kept AS item, 'completed' AS kind, $5::timestamptz AS at, worker,
           attempts + 1 AS attempt, NULL AS token, NULL AS error, NULL AS next_due, NULL AS signal, NULL AS reason,
           CASE WHEN claimed_at IS NULL THEN 0 ELSE (extract(epoch FROM ($5::timestamptz - claimed_at)) * 1000000)::bigint END AS run_time_us
    FROM fate WHERE keep > 0
),
{record_events}
