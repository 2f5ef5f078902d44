-- Up-migration of the pgstore schema from version 4 to version 5 (fenced
-- runs and run versions: the runs table's fence column, the versions
-- table and the function a delete of a run drops its versions with).
-- Apply it with your migration tool, in one transaction, before rolling
-- out the release that reads version 5; the names in braces are those of
-- StateTables (pgstore.Migration renders them). It refuses to run on any
-- version but 4.
--
-- ADD COLUMN with a constant default rewrites nothing (PostgreSQL 11 and
-- later): every existing run reads fence 0, written unfenced, and has no
-- versions.
DO $$
BEGIN
    IF (SELECT version FROM adk_schema) IS DISTINCT FROM 4 THEN
        RAISE EXCEPTION 'pgstore migration 005_run_versions: adk_schema.version is %, want 4', (SELECT version FROM adk_schema);
    END IF;
END
$$;

-- Fenced runs (schema version 5): the highest fence (lease token) that
-- has written the run, 0 when only unfenced writes have.
ALTER TABLE {runs} ADD COLUMN IF NOT EXISTS fence bigint NOT NULL DEFAULT 0;

-- Run versions (schema version 5): the runs as they were before each
-- write that kept a version (RunPolicy), written in the statement of that
-- write while it holds the run's row lock. The run's seq and created_at
-- are the run's own (a deleted run takes its versions with it), so they
-- are not repeated here. Writes prune a run's versions oldest first along
-- the primary key, at most contract.VersionPruneBatch a write.
CREATE TABLE IF NOT EXISTS {runs}_versions (
    tenant        text        NOT NULL,
    id            text        NOT NULL,
    version       bigint      NOT NULL,
    session       text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT '',
    data          bytea,
    input_tokens  bigint      NOT NULL DEFAULT 0,
    output_tokens bigint      NOT NULL DEFAULT 0,
    cost_micros   bigint      NOT NULL DEFAULT 0,
    iterations    bigint      NOT NULL DEFAULT 0,
    cursor        bigint      NOT NULL DEFAULT 0,
    fence         bigint      NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant, id, version)
);
-- Deletes every version of a run. A delete of the run calls it after the
-- run's row is deleted (so after every writer that held the row lock
-- before it has committed), and it is VOLATILE so that, under READ
-- COMMITTED, its DELETE takes a snapshot of its own at that moment
-- instead of the calling statement's, older one: it sees the versions
-- those writers committed (the pgstore README explains why none is left).
CREATE OR REPLACE FUNCTION {runs}_drop_versions(p_tenant text, p_id text)
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE n integer;
BEGIN
    DELETE FROM {runs}_versions v WHERE v.tenant = p_tenant AND v.id = p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

UPDATE adk_schema SET version = 5 WHERE version = 4;
