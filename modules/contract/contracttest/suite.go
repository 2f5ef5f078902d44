package contracttest

import "testing"

// StateStore runs the StateStore conformance suite against the stores f
// makes, one fresh store and FakeClock per subtest. Subtests are grouped by
// area (CRUD, Concurrency, Atomicity, Paging, Isolation, Limits, Input,
// Context, Fencing, History), so `go test -run 'StateStore/Paging'` selects one area. A
// backing whose calls travel to a server also runs [StateReplay].
func StateStore(t *testing.T, f StateFactory) {
	t.Helper()
	if f == nil {
		t.Fatal("contracttest.StateStore: nil StateFactory")
	}
	runGroup(t, f, "CRUD", stateCRUDCases())
	runGroup(t, f, "Concurrency", stateConcurrencyCases())
	runGroup(t, f, "Atomicity", stateAtomicityCases())
	runGroup(t, f, "Paging", statePagingCases())
	runGroup(t, f, "Isolation", stateIsolationCases())
	runGroup(t, f, "Limits", stateLimitsCases())
	runGroup(t, f, "Input", stateInputCases())
	runGroup(t, f, "Context", stateContextCases())
	runKeeperGroup(t, f, "Fencing", stateFencingCases())
	runKeeperGroup(t, f, "History", stateHistoryCases())
}

// WorkQueue runs the WorkQueue conformance suite against the queues f
// makes, one fresh queue and FakeClock per subtest; f receives the policy
// each subtest pins. Subtests are grouped by area (Basic, Batch,
// Concurrency, Lease, Retry, Fairness, DeadLetter, Isolation, Limits,
// Input, Context, Inspector, Waker, CompleteClaimer, Flow, Lifecycle, History).
func WorkQueue(t *testing.T, f QueueFactory) {
	t.Helper()
	if f == nil {
		t.Fatal("contracttest.WorkQueue: nil QueueFactory")
	}
	runGroup(t, f, "Basic", queueBasicCases())
	runGroup(t, f, "Batch", queueBatchCases())
	runGroup(t, f, "Concurrency", queueConcurrencyCases())
	runGroup(t, f, "Lease", queueLeaseCases())
	runGroup(t, f, "Retry", queueRetryCases())
	runGroup(t, f, "Fairness", queueFairnessCases())
	runGroup(t, f, "DeadLetter", queueDeadLetterCases())
	runGroup(t, f, "Isolation", queueIsolationCases())
	runGroup(t, f, "Limits", queueLimitsCases())
	runGroup(t, f, "Input", queueInputCases())
	runGroup(t, f, "Context", queueContextCases())
	runGroup(t, f, "Inspector", queueInspectorCases())
	runGroup(t, f, "Waker", queueWakerCases())
	runGroup(t, f, "CompleteClaimer", queueCompleteClaimerCases())
	runGroup(t, f, "Flow", queueFlowCases())
	runGroup(t, f, "Lifecycle", queueLifecycleCases())
	runHistoryGroup(t, f)
}
