-- The dead letters a filter matches, grouped by the start of their last
-- error: $1 queue, $2 tenant ('' any), $3 id ('' any), $4 error substring
-- ('' any), $5 characters of the error that name a group, $6 groups
-- wanted. One row per group, largest first, ties in byte order; every row
-- also carries the filter's total and its number of groups.
WITH g AS (
    SELECT left(last_error, $5) AS error, count(*) AS n, max(dead_at) AS last_dead_at
    FROM {work}
    WHERE {dead_match}
    GROUP BY 1
)
SELECT error, n, last_dead_at, sum(n) OVER () AS total, count(*) OVER () AS distinct_errors
FROM g
ORDER BY n DESC, error COLLATE "C"
LIMIT $6
