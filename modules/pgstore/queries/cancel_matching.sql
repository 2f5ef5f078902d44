-- Cancel every item a filter selects, as cancel.sql cancels one, in one
-- statement: the parameters of fragments/cancel_match.sql ($1..$4), $5 now, $6
-- reason. No row outside the filter is touched.
UPDATE {work}
SET state = CASE WHEN state = 'leased' THEN 'leased' ELSE 'cancelled' END,
    cancelled_at = $5, cancel_reason = $6,
    wait_signal = NULL, wait_since = NULL, wait_until = NULL
WHERE {cancel_match}
