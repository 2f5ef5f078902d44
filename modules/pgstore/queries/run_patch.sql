-- Additive patch: the deltas are added in SQL, so concurrent patches all
-- land. $1 tenant, $2 id, $3..$7 the counter deltas, $8 status ('' keeps
-- it), $9 now.
UPDATE {runs}
SET input_tokens  = input_tokens + $3,
    output_tokens = output_tokens + $4,
    cost_micros   = cost_micros + $5,
    iterations    = iterations + $6,
    cursor        = cursor + $7,
    status        = CASE WHEN $8::text = '' THEN status ELSE $8 END,
    version       = version + 1,
    updated_at    = $9
WHERE tenant = $1 AND id = $2
RETURNING tenant, id, seq, session, status, data, version, input_tokens, output_tokens, cost_micros, iterations, cursor, created_at, updated_at
