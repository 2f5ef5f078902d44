SELECT data FROM adk_blobs WHERE tenant = ? AND ref = ?
