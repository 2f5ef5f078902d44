-- Up-migration of the pgstore schema from version 5 to version 6 (the
-- claim indexes split by priority: {work}_ready holds only items of
-- priority 0, and {work}_ready_due orders the others by due time). Apply
-- it with your migration tool, in one transaction, before rolling out the
-- release that reads version 6; the names in braces are those of
-- StateTables (pgstore.Migration renders them). It refuses to run on any
-- version but 5.
--
-- It rebuilds {work}_ready and builds {work}_ready_due from the queued
-- rows, holding a lock that blocks writes to {work} while it runs. On a
-- large queue, build the two indexes first with CREATE INDEX CONCURRENTLY
-- outside a transaction (under the names {work}_ready_p0 and
-- {work}_ready_due, the first renamed to {work}_ready once the old one is
-- dropped), then run this file: its CREATE INDEX IF NOT EXISTS statements
-- then find them in place.
DO $$
BEGIN
    IF (SELECT version FROM adk_schema) IS DISTINCT FROM 5 THEN
        RAISE EXCEPTION 'pgstore migration 006_ready_by_priority: adk_schema.version is %, want 5', (SELECT version FROM adk_schema);
    END IF;
END
$$;

-- {work}_ready as version 5 had it holds every queued item; rebuilt on
-- priority 0 alone unless it already is (a concurrent build, above).
DO $$
BEGIN
    IF to_regclass('{work}_ready') IS NOT NULL
       AND pg_get_indexdef(to_regclass('{work}_ready')) NOT LIKE '%priority = 0%' THEN
        DROP INDEX {work}_ready;
    END IF;
    IF to_regclass('{work}_ready') IS NULL AND to_regclass('{work}_ready_p0') IS NOT NULL THEN
        ALTER INDEX {work}_ready_p0 RENAME TO {work}_ready;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS {work}_ready ON {work} (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority = 0;
CREATE INDEX IF NOT EXISTS {work}_ready_due ON {work} (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority <> 0;

UPDATE adk_schema SET version = 6 WHERE version = 5;
