-- The run columns of {runs} x, qualified, in the order of run_columns.sql:
-- the RETURNING of a write that joins the run's locked row (old) and so
-- would find each name twice. Queries name it {x_run_columns}.
x.tenant, x.id, x.seq, x.session, x.status, x.data, x.version, x.input_tokens, x.output_tokens, x.cost_micros, x.iterations, x.cursor, x.created_at, x.updated_at, x.fence
