package sqlitestore

// PruneEvery is pruneEvery, for the tests of package sqlitestore_test.
const PruneEvery = pruneEvery
