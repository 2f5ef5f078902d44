-- The dead letters a DeadFilter selects, in the parameters every
-- dead-letter statement shares: $1 queue, $2 tenant ('' any), $3 id
-- ('' any), $4 error substring ('' any). Queries name it {dead_match}.
-- The error is matched ignoring the case of ASCII letters: lower() under
-- the "C" collation folds exactly A-Z, as contract.FoldASCII does,
-- whatever the database's locale.
queue = $1 AND state = 'dead'
  AND ($2::text = '' OR tenant = $2) AND ($3::text = '' OR id = $3)
  AND ($4::text = '' OR strpos(lower(last_error COLLATE "C"), lower($4::text COLLATE "C")) > 0)
