-- The DELETE of a run's versions beyond the policy's bounds, oldest
-- first along the primary key, at most a batch of them: those at or below the
-- newest-N boundary (a range of the index, so the rows read are the rows
-- deleted) and, with an age, those of the oldest $5 updated at or before
-- the cut. Its parameters: $1 tenant, $2 id, and a CTE bounds(kept, cut,
-- batch) of the statement around it: how many versions the policy keeps
-- (1 or more), the age cut (a version updated at or before it is past
-- VersionAge; -infinity without one) and the prune batch
-- (contract.VersionPruneBatch), so that statements whose parameters are
-- numbered differently share it. A statement may add conditions after it
-- (AND ...). Queries name it {prune_versions}.
--
-- The prune reads the versions as its statement's snapshot holds them. A
-- writer of the run that committed after the snapshot was taken kept a
-- version this snapshot misses; that one is newer than every version
-- seen, so leaving it out can only make the newest-N boundary lower: the
-- prune deletes a subset of what it should, never a version still to be
-- kept, and a later prune deletes the rest (reads never return a version
-- past the bounds meanwhile). Inside a write that keeps a version, the
-- version it keeps is not seen either, for the same reason.
DELETE FROM {runs}_versions
WHERE tenant = $1 AND id = $2 AND version IN (
  SELECT c.version FROM (
    (SELECT version FROM {runs}_versions
     WHERE tenant = $1 AND id = $2
       AND version <= coalesce((SELECT version FROM {runs}_versions
                                WHERE tenant = $1 AND id = $2 ORDER BY version DESC OFFSET (SELECT kept FROM bounds) - 1 LIMIT 1), 0)
     ORDER BY version LIMIT (SELECT batch FROM bounds))
    UNION
    (SELECT o.version
     FROM (SELECT version, updated_at FROM {runs}_versions
           WHERE tenant = $1 AND id = $2 AND (SELECT cut FROM bounds) > '-infinity' ORDER BY version LIMIT (SELECT batch FROM bounds)) o
     WHERE o.updated_at <= (SELECT cut FROM bounds))
  ) c
  ORDER BY c.version LIMIT (SELECT batch FROM bounds)
)
