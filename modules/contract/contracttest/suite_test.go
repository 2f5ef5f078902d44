package contracttest_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/policy"
)

// faultEnv names the fault the stores of this test binary carry. Only
// TestEachPointCanFail sets it, in the subprocesses it starts.
const faultEnv = "ADK_CONTRACTTEST_FAULT"

func TestStateStore(t *testing.T) {
	fault := os.Getenv(faultEnv)
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		f := newFaulty(clock, fault, memstore.Settings{Runs: p})
		if fault == "no-run-keeper" {
			return plainState{f}
		}
		return f
	})
}

// plainState hides every method of a store beyond contract.StateStore.
type plainState struct{ contract.StateStore }

func TestStateReplay(t *testing.T) {
	fault := os.Getenv(faultEnv)
	contracttest.StateReplay(t, func(t *testing.T, clock contract.Clock) (contract.StateStore, contracttest.LoseReply) {
		f := newFaulty(clock, fault)
		return f, f.loseReply
	})
}

func TestWorkQueue(t *testing.T) {
	fault := os.Getenv(faultEnv)
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		q := newFaulty(clock, fault, memstore.Settings{Policy: p})
		switch fault {
		case "no-inspector":
			return blind{q}
		case "no-wake":
			return mute{q}
		}
		return q
	})
}

// faults is the table that shows the suites can fail: each row breaks the
// reference store in one way (see faulty) and names the point that must
// catch it. memstore's own mutation table covers faults that need its
// insides (fencing, rotation, lost patches, Seq rewrites, racy claims,
// pruning of run versions).
var faults = []struct{ fault, point string }{
	{"no-run-keeper", "TestStateStore/Fencing"},
	{"no-run-keeper", "TestStateStore/History"},
	{"put-skips-version-check", "TestStateStore/CRUD/StalePutConflicts"},
	{"put-skips-version-check", "TestStateStore/CRUD/PatchMovesVersion"},
	{"put-skips-version-check", "TestStateStore/Concurrency/ConcurrentPutsOneWinnerPerVersion"},
	{"conflict-numbers-swapped", "TestStateStore/CRUD/StalePutConflicts"},
	{"conflict-numbers-swapped", "TestStateStore/CRUD/PutMissingConflicts"},
	{"wall-clock-timestamps", "TestStateStore/CRUD/PutUpdates"},
	{"wall-clock-timestamps", "TestStateStore/CRUD/CreateGet"},
	{"put-writes-counters", "TestStateStore/CRUD/PutIgnoresCountersAndSeq"},
	{"patch-drops-status", "TestStateStore/CRUD/PatchAddsCounters"},
	{"patch-creates-missing", "TestStateStore/CRUD/MissingIsNotFound"},
	{"page-limit-clamped", "TestStateStore/Paging/PageLimits"},
	{"page-default-50", "TestStateStore/Paging/PageLimits"},
	{"page-skips-last", "TestStateStore/Paging/StableWhileUpdating"},
	{"page-skips-last", "TestStateStore/Paging/StableWhileUpdatingConcurrently"},
	{"session-ignored", "TestStateStore/Paging/SessionRuns"},
	{"session-ignored", "TestStateStore/Isolation/SessionsStayInTenant"},
	{"factory-shares", "TestStateStore/Isolation/FactoryStoresShareNothing"},
	{"too-large-retryable", "TestStateStore/Limits/TooLargeCreateRefused"},
	{"invalid-as-not-found", "TestStateStore/Input/BadNamesRefused"},
	{"malformed-json-accepted", "TestStateStore/Input/MalformedDataRefused"},
	{"deadline-ignored", "TestStateStore/Context/ExpiredDeadline"},
	{"conflict-version-read-later", "TestStateStore/Atomicity/ConflictReportsStoredVersion"},
	{"replay-reapplies", "TestStateReplay/Replay/PutNotAConflictWithItself"},
	{"replay-reapplies", "TestStateReplay/Replay/PutSparesRecreatedRun"},
	{"replay-reapplies", "TestStateReplay/Replay/PatchAddedOnce"},
	{"replay-reapplies", "TestStateReplay/Replay/PatchOfDeletedRunAnswered"},
	{"replay-reapplies", "TestStateReplay/Replay/DeleteAnsweredOnce"},
	{"replay-reapplies", "TestStateReplay/Replay/DeleteSparesNewRun"},
	{"replay-answers-current", "TestStateReplay/Replay/PutAnsweredAsItWrote"},
	{"replay-answers-current", "TestStateReplay/Replay/PatchAddedOnce"},
	{"fenced-create-drops-fence", "TestStateStore/Fencing/FencedCreate"},
	{"stale-put-lands", "TestStateStore/Fencing/StalePutRefused"},
	{"stale-put-lands", "TestStateStore/Fencing/TwoExecutionsInterleave"},
	{"stale-put-writes-first", "TestStateStore/Fencing/StalePutRefused"},
	{"stale-fence-numbers-swapped", "TestStateStore/Fencing/StalePutRefused"},
	{"stale-fence-untyped", "TestStateStore/Fencing/StalePutRefused"},
	{"stale-fence-untyped", "TestStateStore/Fencing/StalePatchRefused"},
	{"stale-fence-untyped", "TestStateStore/Fencing/StaleDeleteRefused"},
	{"stale-patch-lands", "TestStateStore/Fencing/StalePatchRefused"},
	{"stale-patch-lands", "TestStateStore/Fencing/TwoExecutionsInterleave"},
	{"stale-patch-adds-counters", "TestStateStore/Fencing/StalePatchRefused"},
	{"stale-delete-lands", "TestStateStore/Fencing/StaleDeleteRefused"},
	{"equal-fence-refused", "TestStateStore/Fencing/EqualAndHigherLand"},
	{"fence-not-raised", "TestStateStore/Fencing/EqualAndHigherLand"},
	{"unfenced-refused", "TestStateStore/Fencing/UnfencedLandsKeepsFence"},
	{"unfenced-reports-no-fence", "TestStateStore/Fencing/UnfencedLandsKeepsFence"},
	{"require-fence-ignored", "TestStateStore/Fencing/RequireFenceRefusesUnfenced"},
	{"version-checked-before-fence", "TestStateStore/Fencing/CheckOrder"},
	{"overflow-checked-before-fence", "TestStateStore/Fencing/CheckOrder"},
	{"deleted-fence-remembered", "TestStateStore/Fencing/CheckOrder"},
	{"deleted-fence-remembered", "TestStateStore/Fencing/DeleteForgetsFence"},
	{"keeps-one-more", "TestStateStore/History/KeepsExactlyN"},
	{"keeps-one-fewer", "TestStateStore/History/KeepsExactlyN"},
	{"version-counters-current", "TestStateStore/History/VersionsHoldTheRunAsItWas"},
	{"version-fence-current", "TestStateStore/History/VersionsHoldTheRunAsItWas"},
	{"version-updated-current", "TestStateStore/History/VersionsHoldTheRunAsItWas"},
	{"version-data-current", "TestStateStore/History/VersionsHoldTheRunAsItWas"},
	{"counter-patch-keeps-version", "TestStateStore/History/CounterPatchKeepsNoVersion"},
	{"age-ignored", "TestStateStore/History/AgePruning"},
	{"current-not-listed", "TestStateStore/History/CurrentListedFirst"},
	{"version-cursor-by-position", "TestStateStore/History/PagingStableWhileWritten"},
	{"get-version-missing-is-current", "TestStateStore/History/GetRunVersion"},
	{"fork-copies-current", "TestStateStore/History/ForkCopiesVersion"},
	{"fork-overwrites", "TestStateStore/History/ForkOntoExistingConflicts"},
	{"fork-conflict-names-source", "TestStateStore/History/ForkOntoExistingConflicts"},
	{"fork-missing-forks-current", "TestStateStore/History/ForkMissingVersionNotFound"},
	{"delete-keeps-versions", "TestStateStore/History/DeleteRemovesVersions"},

	{"expiry-from-wall-clock", "TestWorkQueue/Basic/EnqueueClaimComplete"},
	{"claim-strips-metadata", "TestWorkQueue/Basic/EnqueueClaimComplete"},
	{"lease-lost-names-all", "TestWorkQueue/Basic/BatchCompletePartialLoss"},
	{"complete-batch-by-item", "TestWorkQueue/Batch/CompleteNamesItemTwice"},
	{"complete-batch-by-item", "TestWorkQueue/Batch/CompleteStaleBesideLive"},
	{"enqueue-batch-stops-at-live", "TestWorkQueue/Batch/EnqueueResentBatch"},
	{"claim-repeats-lease", "TestWorkQueue/Concurrency/ConcurrentClaimsMax1"},
	{"claim-repeats-lease", "TestWorkQueue/Concurrency/ConcurrentClaimCompleteMax5"},
	{"heartbeat-keeps-token", "TestWorkQueue/Lease/HeartbeatKeepsLease"},
	{"heartbeat-doubles-extend", "TestWorkQueue/Lease/HeartbeatKeepsLease"},
	{"heartbeat-fakes-success", "TestWorkQueue/Lease/ReaperRacesHeartbeat"},
	{"heartbeat-fakes-success", "TestWorkQueue/Lease/StaleTokenWhileRequeued"},
	{"tokens-decrease", "TestWorkQueue/Lease/TokensIncrease"},
	{"reap-reports-zero", "TestWorkQueue/Lease/SilenceLosesLease"},
	{"reap-reports-zero", "TestWorkQueue/Lease/ReapCounts"},
	{"lease-lost-untyped", "TestWorkQueue/Lease/StaleTokenAfterReclaim"},
	{"lease-lost-untyped", "TestWorkQueue/Lease/CompletedOrForgedTokenLost"},
	{"fail-hides-decision", "TestWorkQueue/Retry/BackoffSchedule"},
	{"permanent-unwrapped", "TestWorkQueue/Retry/PermanentDeadAtOnce"},
	{"dead-letters-strip-metadata", "TestWorkQueue/Retry/MetadataSurvivesEverything"},
	{"claim-caps-batch", "TestWorkQueue/Fairness/BusyTenantFillsBatch"},
	{"claim-sorts-batch", "TestWorkQueue/Fairness/OncePerRotationBatch7"},
	{"claim-sorts-batch", "TestWorkQueue/Fairness/SmallTenantsServedEarlyBatch10"},
	{"dead-letters-newest-first", "TestWorkQueue/DeadLetter/Paging"},
	{"dead-filter-case-sensitive", "TestWorkQueue/DeadLetter/ErrorFilterIgnoresASCIICase"},
	{"dead-filter-case-sensitive", "TestWorkQueue/DeadLetter/Filters"},
	{"newest-ignored", "TestWorkQueue/DeadLetter/PagingNewestFirst"},
	{"newest-ignored", "TestWorkQueue/DeadLetter/PagingTurnsAround"},
	{"newest-cursor-at-letter", "TestWorkQueue/DeadLetter/PagingTurnsAround"},
	{"skip-ignored", "TestWorkQueue/DeadLetter/PagingSkips"},
	{"skip-one-short", "TestWorkQueue/DeadLetter/PagingSkips"},
	{"summary-ignores-error", "TestWorkQueue/DeadLetter/SummaryFollowsFilter"},
	{"summary-groups-whole-errors", "TestWorkQueue/DeadLetter/Summary"},
	{"summary-smallest-first", "TestWorkQueue/DeadLetter/Summary"},
	{"requeue-ignores-tenant", "TestWorkQueue/DeadLetter/RequeueAllMatching"},
	{"requeue-ignores-tenant", "TestWorkQueue/DeadLetter/BulkActionsStayInFilter"},
	{"purge-ignores-id", "TestWorkQueue/DeadLetter/PurgeRemoves"},
	{"factory-shares", "TestWorkQueue/Isolation/FactoryQueuesShareNothing"},
	{"payload-too-large-retryable", "TestWorkQueue/Limits/TooLargePayloadRefused"},
	{"claim-clamps-max", "TestWorkQueue/Input/ClaimBadRequestRefused"},
	{"claim-nil-on-empty", "TestWorkQueue/Context/EmptyQueueQuickly"},
	{"enqueue-cancel-ignored", "TestWorkQueue/Context/CancelledContextChangesNothing"},
	{"no-inspector", "TestWorkQueue/Inspector/Implemented"},
	{"later-counted-ready", "TestWorkQueue/Inspector/TenantCounts"},
	{"rotation-order-reversed", "TestWorkQueue/Inspector/RotationOrderPredictsClaims"},
	{"recent-newest-first", "TestWorkQueue/Inspector/RecentTurns"},
	{"leases-latest-first", "TestWorkQueue/Inspector/Leases"},
	{"item-hides-lease", "TestWorkQueue/Inspector/Item"},
	{"health-ignores-context", "TestWorkQueue/Inspector/CancelledContext"},
	{"no-wake", "TestWorkQueue/Waker/EnqueueWakes"},
	{"cc-drops-completes", "TestWorkQueue/CompleteClaimer/CompletesThenClaims"},
	{"cc-hides-lost", "TestWorkQueue/CompleteClaimer/LostLeaseNamedClaimGoesAhead"},
}

func TestEachPointCanFail(t *testing.T) {
	if os.Getenv(faultEnv) != "" {
		return // inside a fault subprocess: only the points it was asked for run
	}
	if testing.Short() {
		t.Skip("starts one subprocess per fault; skipped with -short")
	}
	var points []string
	for _, c := range faults {
		points = append(points, c.point)
		t.Run(c.fault+"@"+strings.ReplaceAll(c.point, "/", "."), func(t *testing.T) {
			t.Parallel()
			out, err := runPoints(t, c.fault, c.point)
			if !bytes.Contains(out, []byte("=== RUN   "+c.point+"\n")) {
				t.Fatalf("point %s did not run (renamed?); output:\n%s", c.point, out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || !bytes.Contains(out, []byte("--- FAIL: "+c.point+" ")) {
				t.Fatalf("fault %s was not caught by %s; output:\n%s", c.fault, c.point, out)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		out, err := runPoints(t, "", points...)
		if err != nil {
			t.Fatalf("the intact store fails points of the fault table: %v\n%s", err, out)
		}
	})
}

// runPoints runs suite points in a subprocess of this test binary whose
// stores carry the fault.
func runPoints(t *testing.T, fault string, points ...string) ([]byte, error) {
	t.Helper()
	alts := make([]string, len(points))
	for i, p := range points {
		alts[i] = "^" + strings.ReplaceAll(p, "/", "$/^") + "$"
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+strings.Join(alts, "|"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), faultEnv+"="+fault, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd.CombinedOutput()
}
