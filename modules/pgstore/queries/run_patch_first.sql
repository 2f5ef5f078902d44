-- The first try of a patch that keeps a version (run_patch_keep.sql, in
-- its parameters), without the row lock (fragments/patch_first.sql): the
-- run as the statement's snapshot holds it (o) is checked and the update
-- lands only on that very row (its ctid; an update of a row a concurrent
-- write replaced is re-checked on the newest one, and must still be at
-- o's version), so the version kept is the row replaced. It returns a row
-- only when it wrote: (true, the run as written). No row means nothing
-- was written, for whatever reason (the run moved on after the snapshot,
-- is missing, or refuses the patch: a fence above $10, a sum past the
-- bigint range), and the caller sends run_patch_keep.sql, which decides
-- on the locked row. Leaving the refusal to that statement keeps this
-- one to the update and the insert: no read of the run after them, which
-- the executor would set up on every patch only to skip it. Without the
-- lock the patch writes no tuple lock (a WAL record, and a second
-- exclusive lock of the run's page) and probes the primary key once. It
-- prunes nothing: run_patch_first_prune.sql is the same try with the
-- prune.
WITH {patch_first}, {keep_version}
SELECT true, {run_columns} FROM written
