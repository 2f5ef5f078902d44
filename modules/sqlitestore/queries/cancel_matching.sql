-- The items a bulk cancel selects: of queue ?1, tenant ?2 ('' any), whose
-- id starts with ?3, in state ?4 ('' for live work: queued, waiting,
-- leased); leases already marked are left out.
SELECT tenant, id, state FROM adk_work
WHERE queue = ?1 AND (?2 = '' OR tenant = ?2) AND substr(id, 1, length(?3)) = ?3
  AND CASE WHEN ?4 = '' THEN state IN ('queued', 'waiting', 'leased') ELSE state = ?4 END
  AND NOT (state = 'leased' AND cancelled_at <> 0)
ORDER BY tenant, id
