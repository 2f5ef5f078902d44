-- A kept version read as a run, in the order of run_columns.sql: the
-- version's own columns (v, of {runs}_versions) with the run's (r) seq and
-- created_at. Queries name it {version_columns}.
r.tenant, r.id, r.seq, v.session, v.status, v.data, v.version, v.input_tokens, v.output_tokens, v.cost_micros, v.iterations, v.cursor, r.created_at, v.updated_at, v.fence
