-- The UPDATE of an additive patch that keeps no version (run_patch.sql
-- says why it holds), without its RETURNING: $1 tenant, $2 id, $3..$7
-- the counter deltas, $8 status ('' keeps it), $9 now, $10 the fence (0:
-- unfenced). Queries name it {patch_update}.
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
