-- The CTEs kept and pruned of a write that keeps a version (after the
-- CTEs old, the run's row locked with a column keeps, and written, the
-- update), continuing its WITH clause: the run as it was before the write
-- (old) is kept as a version when the write wrote and old.keeps holds,
-- and then the run's versions beyond the policy's bounds are deleted,
-- oldest first along the primary key, at most $5 of them: those at or
-- below the newest-N boundary (a range of the index, so the rows read are
-- the rows deleted) and, with an age, those of the oldest $5 updated at or
-- before the cut
-- (contract.VersionPruneBatch). Its parameters: $1 tenant, $2 id, $3 how
-- many versions the policy keeps (1 or more), $4 the age cut (a version
-- updated at or before it is past VersionAge; -infinity without one), $5
-- the prune batch. Queries name it {keep_version}.
--
-- The prune reads the versions as the statement's snapshot holds them.
-- A writer of the run that committed after the snapshot was taken (the
-- row lock waited for it) kept a version this snapshot misses; that one
-- is newer than every version seen, so leaving it out can only make the
-- newest-N boundary lower: the prune deletes a subset of what it should,
-- never a version still to be kept, and the next write deletes the rest
-- (reads never return a version past the bounds meanwhile).
kept AS (
  INSERT INTO {runs}_versions (tenant, id, version, session, status, data, input_tokens, output_tokens, cost_micros, iterations, cursor, fence, updated_at)
  SELECT old.tenant, old.id, old.version, old.session, old.status, old.data, old.input_tokens, old.output_tokens, old.cost_micros, old.iterations, old.cursor, old.fence, old.updated_at
  FROM old
  WHERE EXISTS (SELECT 1 FROM written) AND old.keeps
  RETURNING version
), pruned AS (
  DELETE FROM {runs}_versions
  WHERE tenant = $1 AND id = $2 AND EXISTS (SELECT 1 FROM kept) AND version IN (
    SELECT c.version FROM (
      (SELECT version FROM {runs}_versions
       WHERE tenant = $1 AND id = $2
         AND version <= coalesce((SELECT version FROM {runs}_versions
                                  WHERE tenant = $1 AND id = $2 ORDER BY version DESC OFFSET $3 - 1 LIMIT 1), 0)
       ORDER BY version LIMIT $5)
      UNION
      (SELECT o.version
       FROM (SELECT version, updated_at FROM {runs}_versions
             WHERE tenant = $1 AND id = $2 AND $4::timestamptz > '-infinity' ORDER BY version LIMIT $5) o
       WHERE o.updated_at <= $4)
    ) c
    ORDER BY c.version LIMIT $5
  )
)
