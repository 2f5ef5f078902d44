-- Queue names that hold any item.
SELECT q.queue
FROM (SELECT DISTINCT queue FROM {turns}) q
WHERE EXISTS (SELECT 1 FROM {work} w WHERE w.queue = q.queue)
ORDER BY q.queue
