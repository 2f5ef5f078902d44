-- The columns a version keeps of the row a write replaced, as items of
-- the RETURNING of an update that joins that row as o: each named o_ and
-- the column's name. keep_version.sql reads them back from the update's
-- CTE (written). Queries name it {old_columns}.
o.version AS o_version, o.session AS o_session, o.status AS o_status, o.data AS o_data, o.input_tokens AS o_input_tokens, o.output_tokens AS o_output_tokens, o.cost_micros AS o_cost_micros, o.iterations AS o_iterations, o.cursor AS o_cursor, o.fence AS o_fence, o.updated_at AS o_updated_at
