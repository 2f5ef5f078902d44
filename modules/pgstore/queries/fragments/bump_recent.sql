-- The SET items of a claim's bump (claim.sql, claim_flow.sql) that keep
-- a served tenant's latest 32 turns for the Inspector: its item ids,
-- their places in the batch, the worker and the time. The UPDATE names
-- the turn row t, the served tenant s (ids, ords) and the batch b; $2 is
-- now and $4 the worker. Queries name it {bump_recent}.
recent_ids     = (t.recent_ids || s.ids)[greatest(1, cardinality(t.recent_ids) + cardinality(s.ids) - 31):],
        recent_keys    = (t.recent_keys || array(SELECT b.n * 1024 + o FROM unnest(s.ords) o))[greatest(1, cardinality(t.recent_keys) + cardinality(s.ids) - 31):],
        recent_workers = (t.recent_workers || array_fill($4::text, ARRAY[cardinality(s.ids)]))[greatest(1, cardinality(t.recent_workers) + cardinality(s.ids) - 31):],
        recent_at      = (t.recent_at || array_fill($2::timestamptz, ARRAY[cardinality(s.ids)]))[greatest(1, cardinality(t.recent_at) + cardinality(s.ids) - 31):]
