-- Optimistic put that keeps the run as it was as a version, in the
-- parameters of run_update.sql: $1 tenant, $2 id, $3 session, $4 status,
-- $5 data, $6 now, $7 the version the caller holds, $8 the fence (0:
-- unfenced). The version kept is the row of the statement's snapshot (o,
-- joined by the update), and the update lands only on a row at version $7
-- while o is at $7 too: every write bumps the version, so the row the
-- update replaces (re-checked on the newest row when a concurrent write
-- moved it on, as in run_update.sql) is then o itself, and no lock is
-- taken before the update. Rows come back as (written, run columns): the
-- run as written or, when the update matched no row, the run as the
-- snapshot holds it; one that fails the checks (a fence above $8, a
-- version other than $7) is the run of one instant inside the call at
-- which the put is refused, and one that passes them means the row moved
-- on after the snapshot: nothing was written, and the caller sends the
-- statement again. No row: the run did not exist at the snapshot. It
-- prunes nothing: the put whose turn it is to prune sends
-- run_update_keep_prune.sql instead.
WITH {update_keep}, {keep_version}
{written_or_snapshot}
