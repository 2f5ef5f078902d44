-- Index sizes of the work table: $1 its name.
SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)
FROM pg_index i
WHERE i.indrelid = to_regclass($1)
ORDER BY 1
