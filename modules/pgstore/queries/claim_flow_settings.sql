-- Settings of a flow claim's own transaction (queries/claim_flow.sql):
-- those of claim_settings.sql, and the generic plan always. claim.go
-- says why.
SELECT set_config('enable_seqscan', 'off', true),
       set_config('enable_sort', 'off', true),
       set_config('jit', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true)
