-- The dead letters a DeadFilter selects, in the parameters every
-- dead-letter statement shares: $1 queue, $2 tenant ('' any), $3 id
-- ('' any), $4 error substring ('' any). Queries name it {dead_match}.
queue = $1 AND state = 'dead'
  AND ($2::text = '' OR tenant = $2) AND ($3::text = '' OR id = $3)
  AND ($4::text = '' OR strpos(last_error, $4) > 0)
