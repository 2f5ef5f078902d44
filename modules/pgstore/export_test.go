package pgstore

import "time"

// ClaimSQL is the claim statement rendered for t, for plan tests.
func ClaimSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).claim }

// ClaimLeanSQL is the lean claim statement rendered for t, for plan tests.
func ClaimLeanSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).claimLean }

// CompleteSQL is the batch complete statement rendered for t.
func CompleteSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).complete }

// CompleteLeanSQL is the lean batch complete statement rendered for t.
func CompleteLeanSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).completeLean }

// Backoff is the delay before connection attempt failures+1.
func (l *Listener) Backoff(failures int) time.Duration { return l.backoff(failures) }

// SetJitter pins the fraction the listener's reconnect waits draw.
func (l *Listener) SetJitter(f func() float64) { l.jitter = f }

// SchemaV1 is the version 1 schema rendered for t, for the migration test.
func SchemaV1(t StateTables) string {
	t, _ = t.normalized()
	return render(t, readSQL(schemaFS, "schema/001_schema.sql"))
}

// ClaimFlowSQL is the claim statement of a queue with limits, rendered for t.
func ClaimFlowSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).claimFlow }

// SchemaV2 is the version 2 schema rendered for t, for the migration test.
func SchemaV2(t StateTables) string {
	t, _ = t.normalized()
	return render(t, readSQL(schemaFS, "schema/002_schema.sql"))
}

// SchemaV3 is the version 3 schema rendered for t, for the migration test.
func SchemaV3(t StateTables) string {
	t, _ = t.normalized()
	return render(t, readSQL(schemaFS, "schema/003_schema.sql"))
}

// SchemaV4 is the version 4 schema rendered for t, for the migration test.
func SchemaV4(t StateTables) string {
	t, _ = t.normalized()
	return render(t, readSQL(schemaFS, "schema/004_schema.sql"))
}

// SchemaV5 is the version 5 schema rendered for t, for the migration test.
func SchemaV5(t StateTables) string {
	t, _ = t.normalized()
	return render(t, readSQL(schemaFS, "schema/005_schema.sql"))
}

// RunUpdateKeepSQL is the put statement that keeps a version, rendered for t.
func RunUpdateKeepSQL(t StateTables) string {
	t, _ = t.normalized()
	return loadQueries(t).runUpdateKeep
}

// PruneEvery is how often a run's writes prune its versions.
const PruneEvery = pruneEvery

// RunPruneSQL holds the statements a patch's prune can be sent in,
// rendered for t: after the patch on a pooled connection (Async), after
// it in a caller's transaction (Bound), or in the patch's own first try
// (StatusPatch, CounterPatch).
type RunPruneSQL struct{ Async, Bound, StatusPatch, CounterPatch string }

// PruneStatements returns the prune statements rendered for t.
func PruneStatements(t StateTables) RunPruneSQL {
	t, _ = t.normalized()
	q := loadQueries(t)
	return RunPruneSQL{Async: q.runPruneAsync, Bound: q.runVersionsPrune, StatusPatch: q.runPatchFirstPrune, CounterPatch: q.runPatchPrune}
}

// StatusPatchSQL holds the statements of a status patch on a store that
// keeps versions, rendered for t: its first try without the row lock
// (First, or FirstPrune on an expected turn) and the try that locks the
// row (Lock).
type StatusPatchSQL struct{ First, FirstPrune, Lock string }

// StatusPatchStatements returns the statements of a status patch
// rendered for t.
func StatusPatchStatements(t StateTables) StatusPatchSQL {
	t, _ = t.normalized()
	q := loadQueries(t)
	return StatusPatchSQL{First: q.runPatchFirst, FirstPrune: q.runPatchFirstPrune, Lock: q.runPatchKeep}
}

// ClaimEventsSQL is the events claim statement rendered for t, for plan
// tests.
func ClaimEventsSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).claimEvents }

// ClaimPrioSQL is the priorities claim statement rendered for t, for plan
// tests.
func ClaimPrioSQL(t StateTables) string { t, _ = t.normalized(); return loadQueries(t).claimPrio }
