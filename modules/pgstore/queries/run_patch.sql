-- Additive patch, keeping no version: the deltas are added in SQL, so
-- concurrent patches all land. $1 tenant, $2 id, $3..$7 the counter
-- deltas, $8 status ('' keeps it), $9 now, $10 the fence (0: unfenced).
-- A patch that would take any counter past the bigint range, or whose
-- fence is below the run's, matches no row (the sums are checked in
-- numeric, which cannot overflow) rather than failing halfway, and the
-- stored run is read in this same statement, as its snapshot holds it,
-- for the refusal to name the fence or the counter (when the stored run
-- passes both checks, a concurrent write moved the row on after the
-- snapshot: nothing was written, and the caller sends the statement
-- again). Rows come back as (written, run columns); no row: the run did
-- not exist at the snapshot.
WITH written AS (
  UPDATE {runs}
  SET input_tokens  = input_tokens + $3::bigint,
      output_tokens = output_tokens + $4::bigint,
      cost_micros   = cost_micros + $5::bigint,
      iterations    = iterations + $6::bigint,
      cursor        = cursor + $7::bigint,
      status        = CASE WHEN $8::text = '' THEN status ELSE $8 END,
      version       = version + 1,
      updated_at    = $9,
      fence         = greatest(fence, $10::bigint)
  WHERE tenant = $1 AND id = $2
    AND ($10::bigint = 0 OR fence <= $10::bigint)
    AND input_tokens::numeric + $3::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND output_tokens::numeric + $4::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND cost_micros::numeric + $5::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND iterations::numeric + $6::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
    AND cursor::numeric + $7::bigint BETWEEN -9223372036854775808 AND 9223372036854775807
  RETURNING {run_columns}
{written_or_stored}
