-- Adds one item, or nothing when its id is queued, leased or dead.
INSERT INTO adk_work (queue, tenant, id, state, seq, due_at, not_before, payload, metadata, enqueued_at)
VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?)
ON CONFLICT (queue, tenant, id) DO NOTHING
