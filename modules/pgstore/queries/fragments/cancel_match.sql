-- The items a CancelFilter selects, in the parameters every bulk cancel
-- statement shares: $1 queue, $2 tenant ('' any), $3 ID prefix ('' any),
-- $4 state ('' live work: queued, waiting and leased; else that state).
-- A cancelled item, and a lease whose cancel is pending, are never
-- selected (cancelled_at is set on both). Queries name it {cancel_match}.
queue = $1 AND ($2::text = '' OR tenant = $2) AND ($3::text = '' OR starts_with(id, $3))
  AND cancelled_at IS NULL
  AND CASE WHEN $4::text = '' THEN state IN ('queued', 'waiting', 'leased') ELSE state = $4::text END
