-- Complete a batch in one statement: $1..$4 are parallel arrays (queue,
-- tenant, id, token). Each row is deleted only while it is still leased
-- under the token presented; the rows that come back completed, the
-- others were lost.
DELETE FROM {work} w
USING unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS l(queue, tenant, id, token)
WHERE w.queue = l.queue AND w.tenant = l.tenant AND w.id = l.id
  AND w.state = 'leased' AND w.token = l.token
RETURNING w.queue, w.tenant, w.id
