-- Settings of a lean Complete's own transaction (complete.sql rendered
-- lean), sent in the same pipelined batch as the statement. Those of
-- complete_settings.sql, and the generic plan: left to choose, PostgreSQL
-- planned the lean statement afresh on every call, the planning costing
-- more than the DELETE (measured: 661,000 of 1,057,000 instructions a
-- Complete of one). With sequential scans off, the generic plan reaches
-- each row through the primary key whatever the statistics were when it
-- was made. Local to that transaction.
SELECT set_config('enable_seqscan', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true)
