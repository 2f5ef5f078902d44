-- Adds one item, or nothing when its id is in the queue in any state.
INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, enqueued_at, priority, unique_for)
VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (queue, tenant, id) DO NOTHING
