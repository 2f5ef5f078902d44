-- Count what cancel_matching.sql would touch: $1..$4 of
-- fragments/cancel_match.sql.
SELECT count(*) FROM {work} WHERE {cancel_match}
