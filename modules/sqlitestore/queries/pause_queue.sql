-- Pauses (?2 = 1) or resumes (0) the whole queue.
INSERT INTO adk_queues (queue, paused) VALUES (?1, ?2)
ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused
