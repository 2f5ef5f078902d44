-- Settings of a Complete's own transaction, sent in the same pipelined
-- batch as the statement (claim.go says why). Local to that transaction.
SELECT set_config('enable_seqscan', 'off', true)
