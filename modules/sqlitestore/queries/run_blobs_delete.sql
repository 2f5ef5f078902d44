-- Deletes the adk_run_blobs rows listed in ?1, a JSON array of their n:
-- the data of versions just deleted.
DELETE FROM adk_run_blobs WHERE n IN (SELECT value FROM json_each(?1))
