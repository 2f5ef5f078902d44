-- The end of a put that keeps a version without taking the row lock
-- (update_keep.sql), after its WITH clause: rows (written, run columns),
-- the run as written or, when written holds no row, the run as the
-- statement's snapshot holds it (the row the update joined, read again
-- by the primary key; no row: the run did not exist at the snapshot).
-- Queries name it {written_or_snapshot}.
SELECT true, {run_columns} FROM written
UNION ALL
SELECT false, {run_columns} FROM {runs} WHERE tenant = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM written)
