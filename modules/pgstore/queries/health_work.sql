-- Vacuum health of the work table: $1 its name (resolved on search_path).
SELECT coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0), s.last_autovacuum, s.last_vacuum,
       coalesce(s.autovacuum_count, 0), coalesce(c.reloptions, '{}'::text[]),
       pg_total_relation_size(c.oid), pg_indexes_size(c.oid)
FROM pg_class c
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = to_regclass($1)
