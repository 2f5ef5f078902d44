-- Settings of a claim's own transaction, sent in the same pipelined batch
-- as the claim (claim.go says why each one is there). All are local to
-- that transaction.
SELECT set_config('enable_seqscan', 'off', true),
       set_config('enable_sort', 'off', true),
       set_config('jit', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true)
